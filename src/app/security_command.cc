#include "app/security_command.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <fmt/format.h>
#include <simdjson.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>

#include "app/http_admin.h"
#include "app/password_input.h"
#include "app/security_admin.h"
#include "catalog/catalog.h"
#include "common/logging.h"
#include "sql/http/http_message.h"
#include "sql/json_text.h"

namespace sluice::app {
namespace {

// Where the command acts: a running broker, or a stopped broker's data directory.
struct target {
    server_flags server;
    std::string data_dir;
    bool init = false;  // --init: make data_dir a data directory if it is not one yet
    const char* program = "sluice";
};

bool online(const target& t) {
    return t.data_dir.empty();
}

void complain(const target& t, const std::string& message) {
    std::fprintf(stderr, "%s: %s\n", t.program, message.c_str());
}

// A data directory is one with a catalog (docs/formats/data-dir.md): a mistyped path must
// not become a new, empty catalog. --init creates one (for the first admin, before the
// broker's first start) where nothing is yet: a missing or empty directory.
result<void> check_data_dir(const std::filesystem::path& dir, bool init) {
    std::error_code ec;
    if (std::filesystem::exists(dir / "catalog.db", ec)) return {};
    const bool exists = std::filesystem::exists(dir, ec);
    if (!init)
        return {errc::not_found,
                fmt::format("{} is not a Sluice data directory ({}); check the path, or pass "
                            "--init to create one for a broker that has not started yet",
                            dir.string(), exists ? "it has no catalog.db" : "it does not exist")};
    if (exists && !std::filesystem::is_empty(dir, ec))
        return {errc::invalid_argument,
                fmt::format("--init: {} is not empty and not a Sluice data directory; give a "
                            "new or empty directory",
                            dir.string())};
    std::filesystem::create_directories(dir, ec);
    if (ec)
        return {errc::io_error, fmt::format("cannot create {}: {}", dir.string(), ec.message())};
    return {};
}

// The catalog of a stopped broker. A running broker holds the data directory's lock and
// is the only writer of its catalog, so the command refuses and points at --server.
std::unique_ptr<catalog::catalog> open_offline(const target& t, int& code) {
    set_log_level(log_level::warn);  // the command's own output says what happened
    auto dir = std::filesystem::path(t.data_dir);
    if (auto r = check_data_dir(dir, t.init); !r) {
        complain(t, r.err().message);
        code = exit_refused;
        return nullptr;
    }
    auto lock_path = dir / ".lock";
    int fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0 || flock(fd, LOCK_EX | LOCK_NB) != 0) {
        complain(t, fmt::format("a broker is running on {}; change users and policies through "
                                "it (--server HOST:PORT, its --http address)",
                                t.data_dir));
        if (fd >= 0) ::close(fd);
        code = exit_refused;
        return nullptr;
    }
    // The lock stays held (fd open) until the command exits.
    auto cat = catalog::catalog::open(dir / "catalog.db");
    if (!cat) {
        complain(t, cat.err().message);
        code = exit_refused;
        return nullptr;
    }
    return std::move(*cat);
}

int report(const target& t, const result<void>& r) {
    if (r) return 0;
    complain(t, r.err().message);
    return exit_refused;
}

std::string path_part(const std::string& s) {
    return sql::http::percent_encode(s);
}

// The JSON body of a user change for the HTTP API.
std::string user_body(const user_change& u) {
    std::string out = "{\"name\":";
    sql::append_json_string(out, u.name);
    out += ",\"password\":";
    sql::append_json_string(out, u.password);
    out += fmt::format(",\"iterations\":{}", u.iterations);
    if (!u.mechanisms.empty()) {
        out += ",\"mechanisms\":[";
        for (size_t i = 0; i < u.mechanisms.size(); ++i) {
            out += i ? "," : "";
            sql::append_json_string(out, security::mechanism_name(u.mechanisms[i]));
        }
        out += "]";
    }
    return out + "}";
}

// Runs `offline` on the catalog, or calls the API; prints the reply's body with `print`.
template <typename Offline>
int act(const target& t, Offline offline, std::string_view method, const std::string& path,
        const std::string& body) {
    int code = 0;
    if (online(t)) {
        admin_call(t.program, t.server, method, path, body, code);
        return code;
    }
    auto cat = open_offline(t, code);
    if (!cat) return code;
    return report(t, offline(*cat));
}

// The list commands: a table, or the API's JSON with --json.
int list(const target& t, const std::string& path, bool json,
         std::string (*offline_json)(const catalog::security_store&),
         void (*print_table)(simdjson::dom::element)) {
    std::string text;
    int code = 0;
    if (online(t)) {
        auto reply = admin_call(t.program, t.server, "GET", path, {}, code);
        if (!reply) return code;
        text = reply->body;
    } else {
        auto cat = open_offline(t, code);
        if (!cat) return code;
        text = offline_json(*cat);
    }
    if (json) {
        std::fputs(text.c_str(), stdout);
        if (text.empty() || text.back() != '\n') std::fputc('\n', stdout);
        return 0;
    }
    simdjson::dom::parser p;
    simdjson::dom::element doc;
    if (p.parse(text).get(doc)) {
        complain(t, "the broker's answer is not JSON");
        return exit_refused;
    }
    print_table(doc);
    return 0;
}

void print_users(simdjson::dom::element doc) {
    std::printf("%-32s %s\n", "USER", "MECHANISMS");
    for (auto u : doc["users"]) {
        std::string_view name;
        if (u["name"].get(name)) continue;
        std::string mechs;
        for (auto m : u["mechanisms"]) {
            std::string_view s;
            if (!m.get(s)) mechs += (mechs.empty() ? "" : ",") + std::string(s);
        }
        std::printf("%-32.*s %s\n", static_cast<int>(name.size()), name.data(), mechs.c_str());
    }
}

void print_policies(simdjson::dom::element doc) {
    std::printf("%-32s %s\n", "POLICY", "USERS");
    for (auto p : doc["policies"]) {
        std::string_view name;
        if (p["name"].get(name)) continue;
        std::string users;
        for (auto u : p["users"]) {
            std::string_view s;
            if (!u.get(s)) users += (users.empty() ? "" : ",") + std::string(s);
        }
        std::printf("%-32.*s %s\n", static_cast<int>(name.size()), name.data(),
                    users.empty() ? "-" : users.c_str());
    }
}

void where_flags(CLI::App* sub, const std::shared_ptr<target>& t) {
    auto* server = add_server_flags(sub, t->server);
    auto* dir = sub->add_option("--data-dir,-d", t->data_dir,
                                "A stopped broker's data directory, changed in place");
    server->excludes(dir);
    dir->excludes(server);
    sub->add_flag("--init", t->init,
                  "With --data-dir: create the data directory if it is not one yet (the first "
                  "admin, before the broker's first start)")
        ->needs(dir);
}

}  // namespace

void add_security_commands(CLI::App& app, int& exit_code) {
    // ---- sluice user ----
    auto* users = app.add_subcommand(
        "user",
        "Manage users (SCRAM credentials) of a running broker or a stopped one's data "
        "directory; passwords are prompted for on a terminal, else read from stdin");
    users->require_subcommand(1);
    auto ut = std::make_shared<target>();
    ut->program = "sluice user";
    auto uc = std::make_shared<user_change>();
    auto mechs = std::make_shared<std::vector<std::string>>();
    auto mech_flags = [uc, mechs](CLI::App* sub) {
        sub->add_option("name", uc->name, "User name")->required();
        sub->add_option("--mechanism", *mechs,
                        "SCRAM-SHA-256 or SCRAM-SHA-512 (repeatable). Default: both for a new "
                        "user, the ones it has for passwd; passwd sets only the mechanisms "
                        "named, the others keep their password")
            ->check(CLI::IsMember({"SCRAM-SHA-256", "SCRAM-SHA-512"}));
        sub->add_option("--iterations", uc->iterations, "PBKDF2 iterations of the credentials")
            ->check(CLI::Range(security::min_iterations, security::max_iterations))
            ->capture_default_str();
    };
    auto user_change_cmd = [ut, uc, mechs, &exit_code](bool create) {
        for (const auto& m : *mechs) uc->mechanisms.push_back(*security::parse_scram_mechanism(m));
        auto pw = read_new_password("new password for " + uc->name);
        if (!pw) {
            complain(*ut, pw.err().message);
            exit_code = exit_refused;
            return;
        }
        uc->password = *pw;
        if (create) {
            exit_code = act(
                *ut, [&](catalog::catalog& c) { return add_user(c, *uc); }, "POST", "/v1/users",
                user_body(*uc));
        } else {
            exit_code = act(
                *ut, [&](catalog::catalog& c) { return change_password(c, *uc); }, "PUT",
                "/v1/users/" + path_part(uc->name), user_body(*uc));
        }
        if (exit_code == 0)
            std::printf("%s user %s\n", create ? "added" : "changed the password of",
                        uc->name.c_str());
    };
    auto* add = users->add_subcommand(
        "add",
        "Add a user; its password is typed twice on a terminal, else the first line of stdin");
    mech_flags(add);
    where_flags(add, ut);
    add->callback([user_change_cmd] { user_change_cmd(true); });
    auto* passwd = users->add_subcommand(
        "passwd", "Change a user's password (typed twice on a terminal, else from stdin)");
    mech_flags(passwd);
    where_flags(passwd, ut);
    passwd->callback([user_change_cmd] { user_change_cmd(false); });
    auto* remove = users->add_subcommand(
        "remove", "Remove a user: its credentials and its policy attachments");
    remove->add_option("name", uc->name, "User name")->required();
    where_flags(remove, ut);
    remove->callback([ut, uc, &exit_code] {
        exit_code = act(*ut, [&](catalog::catalog& c) { return remove_user(c, uc->name); },
                        "DELETE", "/v1/users/" + path_part(uc->name), {});
        if (exit_code == 0) std::printf("removed user %s\n", uc->name.c_str());
    });
    auto json = std::make_shared<bool>(false);
    auto* ulist = users->add_subcommand("list", "List users and their SCRAM mechanisms");
    ulist->add_flag("--json", *json, "Print the JSON document instead of a table");
    where_flags(ulist, ut);
    ulist->callback([ut, json, &exit_code] {
        exit_code = list(*ut, "/v1/users", *json, users_json, print_users);
    });

    // ---- sluice policy ----
    auto* pol = app.add_subcommand(
        "policy",
        "Manage identity policies (IAM-style JSON documents) and their attachments "
        "to users");
    pol->require_subcommand(1);
    auto pt = std::make_shared<target>();
    pt->program = "sluice policy";
    struct policy_args {
        std::string name, file, user;
        bool external = false;  // attach: the user is no Sluice user (a certificate's name)
    };
    auto pa = std::make_shared<policy_args>();
    auto* put = pol->add_subcommand("put", "Add or replace a policy from a JSON file");
    put->add_option("name", pa->name, "Policy name")->required();
    put->add_option("file", pa->file, "The policy document (JSON)")->required();
    where_flags(put, pt);
    put->callback([pt, pa, &exit_code] {
        std::ifstream in(pa->file, std::ios::binary);
        if (!in) {
            complain(*pt, fmt::format("cannot read {}: {}", pa->file, std::strerror(errno)));
            exit_code = exit_refused;
            return;
        }
        std::stringstream ss;
        ss << in.rdbuf();
        std::string doc = ss.str();
        exit_code = act(
            *pt, [&](catalog::catalog& c) { return put_policy(c, pa->name, doc); }, "PUT",
            "/v1/policies/" + path_part(pa->name), doc);
        if (exit_code == 0) std::printf("stored policy %s\n", pa->name.c_str());
    });
    auto* get = pol->add_subcommand("get", "Print a policy's document");
    get->add_option("name", pa->name, "Policy name")->required();
    where_flags(get, pt);
    get->callback([pt, pa, &exit_code] {
        std::string text;
        if (online(*pt)) {
            auto reply = admin_call(pt->program, pt->server, "GET",
                                    "/v1/policies/" + path_part(pa->name), {}, exit_code);
            if (!reply) return;
            text = reply->body;
        } else {
            auto cat = open_offline(*pt, exit_code);
            if (!cat) return;
            auto p = cat->find_policy(pa->name);
            if (!p) {
                complain(*pt, "no policy '" + pa->name + "'");
                exit_code = exit_refused;
                return;
            }
            text = p->document;
        }
        std::fputs(text.c_str(), stdout);
        if (text.empty() || text.back() != '\n') std::fputc('\n', stdout);
    });
    auto* del = pol->add_subcommand("delete", "Delete a policy (and detach it from every user)");
    del->add_option("name", pa->name, "Policy name")->required();
    where_flags(del, pt);
    del->callback([pt, pa, &exit_code] {
        exit_code = act(*pt, [&](catalog::catalog& c) { return c.delete_policy(pa->name); },
                        "DELETE", "/v1/policies/" + path_part(pa->name), {});
        if (exit_code == 0) std::printf("deleted policy %s\n", pa->name.c_str());
    });
    auto* attach = pol->add_subcommand(
        "attach",
        "Attach a policy to a user: a SCRAM user, ANONYMOUS, or with --external any "
        "principal name (a certificate's common name)");
    attach->add_option("name", pa->name, "Policy name")->required();
    attach->add_option("--user,-u", pa->user, "User (principal) name")->required();
    attach->add_flag("--external", pa->external,
                     "The user is not one of `sluice user`'s: a client certificate's common "
                     "name; without it an unknown user is refused (ANONYMOUS needs no flag)");
    where_flags(attach, pt);
    attach->callback([pt, pa, &exit_code] {
        std::string body = "{\"user\":";
        sql::append_json_string(body, pa->user);
        body += pa->external ? ",\"external\":true}" : "}";
        exit_code = act(
            *pt,
            [&](catalog::catalog& c) { return attach_policy(c, pa->name, pa->user, pa->external); },
            "POST", "/v1/policies/" + path_part(pa->name) + "/users", body);
        if (exit_code == 0)
            std::printf("attached policy %s to %s\n", pa->name.c_str(), pa->user.c_str());
    });
    auto* detach = pol->add_subcommand("detach", "Detach a policy from a user");
    detach->add_option("name", pa->name, "Policy name")->required();
    detach->add_option("--user,-u", pa->user, "User (principal) name")->required();
    where_flags(detach, pt);
    detach->callback([pt, pa, &exit_code] {
        exit_code = act(
            *pt, [&](catalog::catalog& c) { return c.detach_policy(pa->name, pa->user); }, "DELETE",
            "/v1/policies/" + path_part(pa->name) + "/users/" + path_part(pa->user), {});
        if (exit_code == 0)
            std::printf("detached policy %s from %s\n", pa->name.c_str(), pa->user.c_str());
    });
    auto pjson = std::make_shared<bool>(false);
    auto* plist = pol->add_subcommand("list", "List policies and the users they are attached to");
    plist->add_flag("--json", *pjson, "Print the JSON document (with each policy's document)");
    where_flags(plist, pt);
    plist->callback([pt, pjson, &exit_code] {
        exit_code = list(*pt, "/v1/policies", *pjson, policies_json, print_policies);
    });
}

}  // namespace sluice::app
