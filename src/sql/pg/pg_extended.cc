// The extended query protocol of pg_connection: Parse, Bind, Describe, Execute, Close
// and Sync. An error makes the connection discard messages up to the next Sync.

#include <fmt/format.h>

#include "sql/pg/lexer.h"
#include "sql/pg/pg_connection.h"
#include "sql/pg/types.h"

namespace sluice::sql::pg {

namespace {

bool allowed_in_failed_transaction(const query_info& info) {
    return info.tx == tx_effect::rollback || info.tx == tx_effect::rollback_to ||
           info.tx == tx_effect::commit;
}

std::vector<param_type> declared_types(const std::vector<uint32_t>& oids) {
    std::vector<param_type> out;
    out.reserve(oids.size());
    for (const uint32_t o : oids) out.push_back(param_type_of(o));
    return out;
}

int16_t format_at(const std::vector<int16_t>& formats, size_t i) {
    if (formats.empty()) return 0;
    return formats.size() == 1 ? formats[0] : formats[i];
}

}  // namespace

void pg_connection::extended_error(const pg_error& e) {
    send_error(e, _session->in_transaction());
    _skip_until_sync = true;
}

bool pg_connection::on_parse(std::string_view body) {
    parse_msg m;
    if (!decode(body, m)) {
        protocol_violation("malformed Parse message");
        return false;
    }
    std::string name(m.name);
    if (!name.empty() && _statements.count(name)) {
        extended_error({"42P05", fmt::format("prepared statement \"{}\" already exists", name)});
        return true;
    }
    auto ps = std::make_shared<prepared_stmt>();
    std::string_view sql = m.query.substr(skip_separators(m.query));
    if (!sql.empty()) {
        std::string_view tail;
        auto r = prepare_query(*_ctx, sql, &tail, declared_types(m.param_oids));
        if (auto* e = std::get_if<pg_error>(&r)) {
            extended_error(*e);
            return true;
        }
        auto& q = std::get<prepared_query>(r);
        if (q.info.copy != copy_format::none) {
            extended_error({"0A000", "COPY runs in the simple query protocol only"});
            return true;
        }
        if (q.stmt && skip_separators(tail) < tail.size()) {
            extended_error({"42601", "cannot insert multiple commands into a prepared statement"});
            return true;
        }
        ps->stmt = std::move(q.stmt);
        ps->info = std::move(q.info);
        ps->sql = std::string(sql);
    }
    size_t n = ps->stmt ? static_cast<size_t>(ps->stmt->param_count()) : 0;
    ps->param_oids.assign(n, oid::unspecified);
    for (size_t i = 0; i < n && i < m.param_oids.size(); ++i) ps->param_oids[i] = m.param_oids[i];
    _statements[name] = std::move(ps);
    put_empty(_out, parse_complete);
    return true;
}

bool pg_connection::on_bind(std::string_view body) {
    bind_msg m;
    if (!decode(body, m)) {
        protocol_violation("malformed Bind message");
        return false;
    }
    std::string portal_name(m.portal);
    // The unnamed portal is replaced by the next Bind to it.
    if (portal_name.empty()) _portals.erase(portal_name);
    if (_portals.count(portal_name)) {
        extended_error({"42P03", fmt::format("portal \"{}\" already exists", portal_name)});
        return true;
    }
    auto sit = _statements.find(std::string(m.statement));
    if (sit == _statements.end()) {
        extended_error(
            {"26000", fmt::format("prepared statement \"{}\" does not exist", m.statement)});
        return true;
    }
    std::shared_ptr<prepared_stmt> ps = sit->second;
    if (_tx_failed && !allowed_in_failed_transaction(ps->info)) {
        extended_error({"25P02",
                        "current transaction is aborted, commands ignored until end of "
                        "transaction block"});
        return true;
    }
    size_t np = m.params.size();
    if (m.param_formats.size() > 1 && m.param_formats.size() != np) {
        extended_error(
            {"08P01", fmt::format("bind message has {} parameter formats but {} parameters",
                                  m.param_formats.size(), np)});
        return true;
    }
    for (auto* formats : {&m.param_formats, &m.result_formats})
        for (int16_t f : *formats)
            if (f != 0 && f != 1) {
                extended_error({"08P01", fmt::format("unsupported format code: {}", f)});
                return true;
            }
    if (np != ps->param_oids.size()) {
        extended_error(
            {"08P01", fmt::format("bind message supplies {} parameters, but prepared statement "
                                  "\"{}\" requires {}",
                                  np, m.statement, ps->param_oids.size())});
        return true;
    }
    std::vector<value> params;
    params.reserve(np);
    for (size_t i = 0; i < np; ++i) {
        auto r = decode_param(m.params[i], ps->param_oids[i], format_at(m.param_formats, i),
                              static_cast<int>(i + 1));
        if (r.error) {
            extended_error(*r.error);
            return true;
        }
        params.push_back(std::move(r.v));
    }
    size_t ncols = ps->stmt ? ps->stmt->columns().size() : 0;
    if (m.result_formats.size() > 1 && m.result_formats.size() != ncols) {
        extended_error({"08P01", fmt::format("bind message has {} result formats but query has {} "
                                             "columns",
                                             m.result_formats.size(), ncols)});
        return true;
    }

    // A statement object runs one portal at a time: a second portal of the same
    // prepared statement gets a fresh one.
    std::shared_ptr<statement> st;
    if (ps->stmt && ps->stmt.use_count() > 1) {
        auto r = prepare_query(*_ctx, ps->sql, nullptr, declared_types(ps->param_oids));
        if (auto* e = std::get_if<pg_error>(&r)) {
            extended_error(*e);
            return true;
        }
        st = std::move(std::get<prepared_query>(r).stmt);
    } else {
        st = ps->stmt;
    }
    if (st) {
        st->reset();
        if (!params.empty()) {
            auto b = st->bind(params);
            if (!b) {
                extended_error(to_pg_error(b.error()));
                return true;
            }
        }
    }
    auto p = std::make_unique<portal>();
    p->source = ps;
    p->stmt = std::move(st);
    for (size_t i = 0; i < ncols; ++i) p->formats.push_back(format_at(m.result_formats, i));
    _portals[portal_name] = std::move(p);
    put_empty(_out, bind_complete);
    return true;
}

bool pg_connection::on_describe(std::string_view body) {
    describe_msg m;
    if (!decode(body, m)) {
        protocol_violation("malformed Describe message");
        return false;
    }
    std::string name(m.name);
    if (m.what == 'P') {
        auto it = _portals.find(name);
        if (it == _portals.end()) {
            extended_error({"34000", fmt::format("portal \"{}\" does not exist", name)});
            return true;
        }
        describe_portal(*it->second);
        return true;
    }
    auto it = _statements.find(name);
    if (it == _statements.end()) {
        extended_error({"26000", fmt::format("prepared statement \"{}\" does not exist", name)});
        return true;
    }
    prepared_stmt& ps = *it->second;
    // Unspecified parameters are text: SQLite's affinity converts '42' for an INTEGER
    // column, and every driver can send text.
    std::vector<uint32_t> param_oids = ps.param_oids;
    for (auto& o : param_oids)
        if (o == oid::unspecified) o = oid::text;
    put_parameter_description(_out, param_oids);
    if (!ps.stmt || ps.stmt->columns().empty()) {
        put_empty(_out, no_data);
        return true;
    }
    // Nothing is stepped for a statement: expression columns are announced as text.
    const auto& cols = ps.stmt->columns();
    auto oids = choose_oids(cols, nullptr);
    put_row_description(_out, fields_for(cols, oids, nullptr));
    ps.described = std::move(oids);
    return true;
}

void pg_connection::prime(portal& p) {
    if (p.st != portal::state::fresh) return;
    switch (p.stmt->step()) {
        case statement::step_state::row:
            p.st = portal::state::has_row;
            break;
        case statement::step_state::done:
            p.st = portal::state::done;
            break;
        case statement::step_state::failed:
            p.st = portal::state::failed;
            break;
    }
}

void pg_connection::describe_portal(portal& p) {
    if (!p.stmt || p.stmt->columns().empty()) {
        put_empty(_out, no_data);
        return;
    }
    // The first row is stepped ahead (and kept) so expression columns get types; an
    // error that step meets is reported by Execute.
    prime(p);
    const auto& cols = p.stmt->columns();
    if (!p.oids)
        p.oids = choose_oids(cols, p.st == portal::state::has_row ? &p.stmt->row() : nullptr);
    put_row_description(_out, fields_for(cols, *p.oids, &p.formats));
}

bool pg_connection::on_execute(std::string_view body) {
    execute_msg m;
    if (!decode(body, m)) {
        protocol_violation("malformed Execute message");
        return false;
    }
    auto it = _portals.find(std::string(m.portal));
    if (it == _portals.end()) {
        extended_error({"34000", fmt::format("portal \"{}\" does not exist", m.portal)});
        return true;
    }
    execute_portal(*it->second, m.max_rows);
    return true;
}

void pg_connection::execute_portal(portal& p, int32_t max_rows) {
    if (!p.stmt) {
        put_empty(_out, empty_query_response);
        return;
    }
    const query_info& info = p.source->info;
    if (p.st == portal::state::fresh) {
        auto gate = check_tx(info);
        if (gate.what == tx_gate::action::reject) {
            extended_error(gate.error);
            return;
        }
        if (gate.what == tx_gate::action::skip) {
            if (gate.notice) put_notice(_out, *gate.notice);
            put_command_complete(_out, gate.tag);
            p.st = portal::state::done;
            return;
        }
    }
    bool was_in_tx = _session->in_transaction();
    statement& st = *p.stmt;
    const auto& cols = st.columns();
    prime(p);
    if (!cols.empty() && !p.oids) {
        // Without a Describe of the portal, the statement's Describe (if any) decided.
        p.oids = p.source->described
                     ? *p.source->described
                     : choose_oids(cols, p.st == portal::state::has_row ? &st.row() : nullptr);
    }
    int64_t rows = 0;
    auto limit_reached = [&] { return max_rows > 0 && rows >= max_rows; };
    while (!_broken) {
        if (p.st == portal::state::has_row) {
            if (limit_reached()) break;
            if (!cols.empty()) {
                pg_error err;
                if (!put_data_row(st.row(), *p.oids, &p.formats, err)) {
                    p.st = portal::state::failed;
                    st.reset();
                    send_error(err, was_in_tx);
                    _skip_until_sync = true;
                    return;
                }
            }
            ++rows;
            p.st = portal::state::running;
            if (!flush_if_large()) return;
        } else if (p.st == portal::state::running) {
            if (limit_reached()) break;
            switch (st.step()) {
                case statement::step_state::row:
                    p.st = portal::state::has_row;
                    break;
                case statement::step_state::done:
                    p.st = portal::state::done;
                    break;
                case statement::step_state::failed:
                    p.st = portal::state::failed;
                    break;
            }
        } else {
            break;
        }
    }
    if (p.st == portal::state::has_row || p.st == portal::state::running) {
        put_empty(_out, portal_suspended);
        return;
    }
    if (p.st == portal::state::failed) {
        send_error(to_pg_error(st.error()), was_in_tx);
        _skip_until_sync = true;
        return;
    }
    succeeded(info);
    put_command_complete(_out, command_tag(info, st, rows));
}

bool pg_connection::on_close(std::string_view body) {
    close_msg m;
    if (!decode(body, m)) {
        protocol_violation("malformed Close message");
        return false;
    }
    // Closing what does not exist is not an error.
    if (m.what == 'S')
        _statements.erase(std::string(m.name));
    else
        _portals.erase(std::string(m.name));
    put_empty(_out, close_complete);
    return true;
}

void pg_connection::on_sync() {
    _skip_until_sync = false;
    drop_portals_outside_transaction();
    put_ready_for_query(_out, tx_status());
}

}  // namespace sluice::sql::pg
