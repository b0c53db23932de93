#pragma once

// Security helpers of the SQL tests (engine, PostgreSQL wire, HTTP): a security::gate
// with users and exact grants instead of policies, and a throwaway certificate for TLS.

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "net/tls.h"
#include "security/gate.h"

namespace sluice::sql::test {

class fake_gate final : public security::gate, public security::credential_source {
  public:
    explicit fake_gate(bool require_login = true) : _require_login(require_login) {}

    // Both SCRAM mechanisms, as `sluice user add` stores them. Few iterations: the tests
    // log in often.
    void add_user(const std::string& user, const std::string& password) {
        std::lock_guard lk(_mu);
        for (auto m : {security::scram_mechanism::sha256, security::scram_mechanism::sha512})
            _creds[user].push_back(security::make_credential(m, password));
    }
    void add_user(const std::string& user, security::scram_credential c) {
        std::lock_guard lk(_mu);
        _creds[user].push_back(std::move(c));
    }
    // "sluice:topic:orders", "sluice:cluster", ...
    void allow(const std::string& user, security::action a, const std::string& resource) {
        std::lock_guard lk(_mu);
        _grants.insert({user, a, resource});
        ++_generation;
    }
    void revoke_all() {
        std::lock_guard lk(_mu);
        _grants.clear();
        ++_generation;
    }
    uint64_t generation() const override {
        std::lock_guard lk(_mu);
        return _generation;
    }

    bool authentication_required() const override { return _require_login; }
    const security::credential_source& credentials() const override { return *this; }
    std::vector<security::scram_credential> credentials(const std::string& user) const override {
        std::lock_guard lk(_mu);
        auto it = _creds.find(user);
        return it == _creds.end() ? std::vector<security::scram_credential>{} : it->second;
    }
    bool allowed(const security::principal& p, security::action a,
                 const security::resource& r) const override {
        std::lock_guard lk(_mu);
        return _grants.count({p.user, a, security::resource_name(r)}) > 0;
    }

  private:
    bool _require_login;
    mutable std::mutex _mu;
    std::map<std::string, std::vector<security::scram_credential>> _creds;
    std::set<std::tuple<std::string, security::action, std::string>> _grants;
    uint64_t _generation = 1;
};

// A CA and a server certificate for 127.0.0.1 and localhost, made with the openssl
// command line once per test process, in a directory removed at exit.
class test_certs {
  public:
    test_certs() {
        std::string tmpl = (std::filesystem::temp_directory_path() / "sluice-sql-tls-XXXXXX");
        dir = ::mkdtemp(tmpl.data());
        const std::string ec = " -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes";
        openssl("req -x509" + ec + " -days 2 -subj /CN=sluice-sql-test-ca -keyout " +
                path("ca.key") + " -out " + ca() + " -addext basicConstraints=critical,CA:TRUE" +
                " -addext keyUsage=critical,keyCertSign,cRLSign");
        openssl("req -new" + ec + " -subj /CN=localhost -keyout " + key() + " -out " +
                path("server.csr"));
        {
            std::FILE* f = std::fopen(path("server.ext").c_str(), "w");
            std::fputs("subjectAltName=IP:127.0.0.1,DNS:localhost\n", f);
            std::fclose(f);
        }
        openssl("x509 -req -days 2 -in " + path("server.csr") + " -CA " + ca() + " -CAkey " +
                path("ca.key") + " -set_serial 7 -extfile " + path("server.ext") + " -out " +
                cert());
    }
    ~test_certs() {
        std::error_code ec;
        std::filesystem::remove_all(dir, ec);
    }
    test_certs(const test_certs&) = delete;
    test_certs& operator=(const test_certs&) = delete;

    std::string path(const std::string& name) const { return dir + "/" + name; }
    std::string ca() const { return path("ca.pem"); }
    std::string cert() const { return path("server.pem"); }
    std::string key() const { return path("server.key"); }

    std::shared_ptr<net::tls_context> server_context() const {
        net::tls_settings s;
        s.cert_file = cert();
        s.key_file = key();
        auto c = net::tls_context::create_server(s);
        if (!c) throw std::runtime_error(c.err().message);
        return *c;
    }

    std::string dir;

  private:
    static void openssl(const std::string& args) {
        const std::string cmd = "openssl " + args + " >/dev/null 2>&1";
        if (std::system(cmd.c_str()) != 0) throw std::runtime_error("failed: " + cmd);
    }
};

inline const test_certs& certs() {
    static test_certs c;
    return c;
}

}  // namespace sluice::sql::test
