#include "sql/duck/pg_catalog.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <iterator>
#include <mutex>
#include <set>
#include <string_view>
#include <utility>

#include "duckdb/catalog/default/default_functions.hpp"
#include "duckdb/catalog/default/default_table_functions.hpp"
#include "duckdb/main/extension/extension_loader.hpp"
#include "duckdb/parser/expression/cast_expression.hpp"
#include "duckdb/parser/expression/columnref_expression.hpp"
#include "duckdb/parser/expression/constant_expression.hpp"
#include "duckdb/parser/expression/function_expression.hpp"
#include "duckdb/parser/expression/subquery_expression.hpp"
#include "duckdb/parser/parsed_data/create_scalar_function_info.hpp"
#include "duckdb/parser/parsed_expression_iterator.hpp"
#include "duckdb/parser/query_node/select_node.hpp"
#include "duckdb/parser/query_node/set_operation_node.hpp"
#include "duckdb/parser/statement/select_statement.hpp"
#include "duckdb/parser/tableref/basetableref.hpp"
#include "duckdb/parser/tableref/joinref.hpp"
#include "duckdb/parser/tableref/subqueryref.hpp"
#include "duckdb/parser/tableref/table_function_ref.hpp"
#include "sql/duck/pg_relations.h"
#include "sql/duck/pg_sizes.h"
#include "sql/pg_type_table.h"

namespace sluice::sql::duck {

namespace {

namespace d = ::duckdb;

// ---- text ----

bool ident_char(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '$';
}

// The length of `word` at sql[i] (case-insensitive, not inside a longer identifier), or 0.
size_t word_at(std::string_view sql, size_t i, std::string_view word) {
    if (i + word.size() > sql.size()) return 0;
    if (i > 0 && ident_char(sql[i - 1])) return 0;
    for (size_t k = 0; k < word.size(); ++k)
        if (std::tolower(static_cast<unsigned char>(sql[i + k])) != word[k]) return 0;
    if (i + word.size() < sql.size() && ident_char(sql[i + word.size()])) return 0;
    return word.size();
}

size_t skip_space(std::string_view sql, size_t i) {
    while (i < sql.size() && std::isspace(static_cast<unsigned char>(sql[i]))) ++i;
    return i;
}

// `pg_catalog .` at sql[i]: the position after it, or 0.
size_t after_pg_catalog(std::string_view sql, size_t i) {
    i = skip_space(sql, i);
    const auto n = word_at(sql, i, "pg_catalog");
    if (!n) return 0;
    i = skip_space(sql, i + n);
    return i < sql.size() && sql[i] == '.' ? skip_space(sql, i + 1) : 0;
}

// `OPERATOR(pg_catalog.op)` at sql[i]: its end and the operator, or 0.
size_t pg_operator_at(std::string_view sql, size_t i, std::string& op) {
    const auto n = word_at(sql, i, "operator");
    if (!n) return 0;
    auto j = skip_space(sql, i + n);
    if (j >= sql.size() || sql[j] != '(') return 0;
    j = after_pg_catalog(sql, j + 1);
    if (!j) return 0;
    const auto start = j;
    while (j < sql.size() &&
           std::string_view("+-*/<>=~!@#%^&|`?").find(sql[j]) != std::string::npos)
        ++j;
    if (j == start) return 0;
    op.assign(sql.substr(start, j - start));
    j = skip_space(sql, j);
    return j < sql.size() && sql[j] == ')' ? j + 1 : 0;
}

// `COLLATE pg_catalog.default` at sql[i]: its end, or 0.
size_t default_collate_at(std::string_view sql, size_t i) {
    const auto n = word_at(sql, i, "collate");
    if (!n) return 0;
    auto j = after_pg_catalog(sql, i + n);
    if (!j) return 0;
    if (const auto w = word_at(sql, j, "default")) return j + w;
    return sql.substr(j).starts_with("\"default\"") ? j + 9 : 0;
}

// `::pg_catalog.` at sql[i] (a cast to a qualified type, which DuckDB's parser refuses for
// `::pg_catalog.text`): the end of `pg_catalog.`, or 0.
size_t qualified_cast_at(std::string_view sql, size_t i) {
    if (!sql.substr(i).starts_with("::")) return 0;
    return after_pg_catalog(sql, i + 2);
}

// The end of the literal, identifier or comment starting at sql[i], or i when none does.
size_t skip_quoted(std::string_view sql, size_t i) {
    const auto find_from = [&](std::string_view end, size_t from) {
        const auto e = sql.find(end, from);
        return e == std::string_view::npos ? sql.size() : e + end.size();
    };
    if (sql.substr(i).starts_with("--")) return find_from("\n", i);
    if (sql.substr(i).starts_with("/*")) return find_from("*/", i + 2);
    const char c = sql[i];
    if (c == '\'' || c == '"') {
        // E'...' takes backslash escapes; a doubled quote is one in either.
        const bool escapes = c == '\'' && i > 0 && (sql[i - 1] == 'e' || sql[i - 1] == 'E') &&
                             (i < 2 || !ident_char(sql[i - 2]));
        for (size_t j = i + 1; j < sql.size(); ++j) {
            if (escapes && sql[j] == '\\') {
                ++j;
            } else if (sql[j] == c) {
                if (j + 1 < sql.size() && sql[j + 1] == c) {
                    ++j;
                } else {
                    return j + 1;
                }
            }
        }
        return sql.size();
    }
    if (c == '$' && (i == 0 || !ident_char(sql[i - 1]))) {
        auto j = i + 1;
        while (j < sql.size() &&
               (std::isalnum(static_cast<unsigned char>(sql[j])) || sql[j] == '_'))
            ++j;
        if (j < sql.size() && sql[j] == '$') return find_from(sql.substr(i, j + 1 - i), j + 1);
    }
    return i;
}

// ---- parsed statements ----

// A cast's type as written, lower case, without quotes and pg_catalog.
std::string cast_name(const d::CastExpression& c) {
    auto t = c.cast_type.ToString();
    std::erase(t, '"');
    std::transform(t.begin(), t.end(), t.begin(),
                   [](unsigned char x) { return static_cast<char>(std::tolower(x)); });
    if (t.starts_with("pg_catalog.")) t.erase(0, 11);
    return t;
}

bool is_cast_to(const d::ParsedExpression& e, std::string_view type) {
    return e.GetExpressionClass() == d::ExpressionClass::CAST &&
           cast_name(e.Cast<d::CastExpression>()) == type;
}

bool is_text_cast(const d::CastExpression& c) {
    const auto t = cast_name(c);
    return c.cast_type.id() == d::LogicalTypeId::VARCHAR || t == "text" || t == "varchar" ||
           t == "name";
}

d::unique_ptr<d::ParsedExpression> call(const char* name, d::unique_ptr<d::ParsedExpression> arg) {
    d::vector<d::unique_ptr<d::ParsedExpression>> args;
    args.push_back(std::move(arg));
    return d::make_uniq<d::FunctionExpression>("", "pg_catalog", name, std::move(args));
}

// x::regclass: a name's relation OID, an OID as it is.
d::unique_ptr<d::ParsedExpression> regclass_of(d::unique_ptr<d::ParsedExpression> x) {
    const bool text =
        x->GetExpressionClass() == d::ExpressionClass::PARAMETER ||
        (x->GetExpressionClass() == d::ExpressionClass::CONSTANT &&
         x->Cast<d::ConstantExpression>().value.type().id() == d::LogicalTypeId::VARCHAR) ||
        (x->GetExpressionClass() == d::ExpressionClass::CAST &&
         is_text_cast(x->Cast<d::CastExpression>()));
    if (text) return call("regclassin", std::move(x));
    return d::make_uniq<d::CastExpression>(d::LogicalType::BIGINT, std::move(x));
}

// `x = ANY(list)`, which DuckDB's parser makes `x = ANY(SELECT UNNEST(list))`, a subquery
// that DuckDB cannot plan in an outer join's condition (SQLAlchemy's get_indexes joins
// pg_attribute ON a.attnum = ANY(ix.indkey)): list_contains(list, x), or nullptr when e
// is not that. (`<> ALL(list)` is NOT of it.)
d::unique_ptr<d::ParsedExpression> any_of_list(d::ParsedExpression& e) {
    if (e.GetExpressionClass() != d::ExpressionClass::SUBQUERY) return nullptr;
    auto& q = e.Cast<d::SubqueryExpression>();
    if (q.subquery_type != d::SubqueryType::ANY ||
        q.comparison_type != d::ExpressionType::COMPARE_EQUAL || !q.child || !q.subquery ||
        q.subquery->node->type != d::QueryNodeType::SELECT_NODE)
        return nullptr;
    auto& sel = q.subquery->node->Cast<d::SelectNode>();
    if (!sel.from_table || sel.from_table->type != d::TableReferenceType::EMPTY_FROM ||
        sel.select_list.size() != 1 || sel.where_clause || sel.groups.group_expressions.size() ||
        sel.select_list[0]->GetExpressionClass() != d::ExpressionClass::FUNCTION)
        return nullptr;
    auto& unnest = sel.select_list[0]->Cast<d::FunctionExpression>();
    if (!d::StringUtil::CIEquals(unnest.function_name, "unnest") || unnest.children.size() != 1)
        return nullptr;
    d::vector<d::unique_ptr<d::ParsedExpression>> args;
    args.push_back(std::move(unnest.children[0]));
    args.push_back(std::move(q.child));
    return d::make_uniq<d::FunctionExpression>("list_contains", std::move(args));
}

// `indkey::text` or `indoption::text` (pg_index's int2vector columns, a list on DuckDB):
// int2vector's text, the numbers with spaces between (`1 2`, as SQLAlchemy's get_indexes
// splits it), not DuckDB's `[1, 2]`; nullptr when c is not that.
d::unique_ptr<d::ParsedExpression> int2vector_text(d::CastExpression& c) {
    if (!is_text_cast(c) || c.child->GetExpressionClass() != d::ExpressionClass::COLUMN_REF)
        return nullptr;
    const auto& column = c.child->Cast<d::ColumnRefExpression>().GetColumnName();
    if (column != "indkey" && column != "indoption") return nullptr;
    d::vector<d::unique_ptr<d::ParsedExpression>> args;
    args.push_back(std::move(c.child));
    args.push_back(d::make_uniq<d::ConstantExpression>(d::Value(" ")));
    return d::make_uniq<d::FunctionExpression>("array_to_string", std::move(args));
}

// `x LIKE p` (and ILIKE, NOT LIKE, NOT ILIKE), which DuckDB's parser makes `~~` and
// matches with no escape character: PostgreSQL's default escape is the backslash (JDBC's
// getTables sends `nspname LIKE 'kafka\_topics'`), so `x LIKE p ESCAPE '\'`, or nullptr when
// e is not such a match. A constant pattern without a backslash means the same either way
// and stays `~~`, which DuckDB's optimizer turns into prefix and substring tests.
d::unique_ptr<d::ParsedExpression> like_with_escape(d::ParsedExpression& e) {
    if (e.GetExpressionClass() != d::ExpressionClass::FUNCTION) return nullptr;
    auto& f = e.Cast<d::FunctionExpression>();
    static constexpr std::pair<std::string_view, const char*> escaping[] = {
        {"~~", "like_escape"},
        {"!~~", "not_like_escape"},
        {"~~*", "ilike_escape"},
        {"!~~*", "not_ilike_escape"}};
    const auto* match = std::find_if(std::begin(escaping), std::end(escaping),
                                     [&f](const auto& m) { return f.function_name == m.first; });
    if (match == std::end(escaping) || !f.catalog.empty() || f.children.size() != 2) return nullptr;
    const auto& pattern = *f.children[1];
    if (pattern.GetExpressionClass() == d::ExpressionClass::CONSTANT) {
        const auto& v = pattern.Cast<d::ConstantExpression>().value;
        if (v.IsNull() || v.type().id() != d::LogicalTypeId::VARCHAR ||
            d::StringValue::Get(v).find('\\') == std::string::npos)
            return nullptr;
    }
    auto args = std::move(f.children);
    args.push_back(d::make_uniq<d::ConstantExpression>(d::Value("\\")));
    return d::make_uniq<d::FunctionExpression>(match->second, std::move(args));
}

// The catalog relations read from this file's table macros instead: (schema, name, macro).
struct overridden {
    const char* schema;
    const char* name;
    const char* macro;
};
constexpr overridden relations[] = {
    {"pg_catalog", "pg_database", "pg_database_rows"},
    {"pg_catalog", "pg_namespace", "pg_namespace_rows"},
    {"information_schema", "schemata", "information_schema_schemata"},
};

const char* macro_for(const d::BaseTableRef& t) {
    if (!t.catalog_name.empty()) return nullptr;
    for (const auto& r : relations)
        if (t.table_name == r.name &&
            (t.schema_name == r.schema ||
             (t.schema_name.empty() && r.schema == std::string_view("pg_catalog"))))
            return r.macro;
    if (t.schema_name.empty() || t.schema_name == "pg_catalog")
        for (const auto& r : pg_relations())
            if (t.table_name == r.name) return r.macro;
    return nullptr;
}

void replace_ref(d::unique_ptr<d::TableRef>& ref) {
    if (!ref || ref->type != d::TableReferenceType::BASE_TABLE) return;
    const auto& t = ref->Cast<d::BaseTableRef>();
    const auto* macro = macro_for(t);
    if (!macro) return;
    auto f = d::make_uniq<d::TableFunctionRef>();
    f->function = d::make_uniq<d::FunctionExpression>(
        "", "pg_catalog", macro, d::vector<d::unique_ptr<d::ParsedExpression>>());
    f->alias = t.alias.empty() ? t.table_name : t.alias;
    f->column_name_alias = t.column_name_alias;
    ref = std::move(f);
}

// The functions of the system catalog's pg_catalog schema (DuckDB's and this file's),
// read once: psql writes pg_catalog.f(...) for functions DuckDB has only in main
// (array_to_string, pg_get_userbyid's peers), and DuckDB would take `pg_catalog.f` for a
// column's method call.
std::once_flag pg_functions_once;
std::set<std::string> pg_functions;

bool in_pg_catalog(const std::string& name) {
    return pg_functions.contains(name);
}

struct rewriter {
    // Whether regexp_full_match calls are `~` and `!~`, PostgreSQL's regular expression
    // search, which DuckDB parses as a whole-string match: when the text calls no
    // regexp_full_match itself.
    bool tilde_searches = false;

    void node(d::QueryNode& n) {
        for (auto& [name, cte] : n.cte_map.map) node(*cte->query->node);
        from(n);
        d::ParsedExpressionIterator::EnumerateQueryNodeChildren(
            n, [this](d::unique_ptr<d::ParsedExpression>& e) { expr(e); },
            [this](d::TableRef& r) { ref(r); });
    }
    // A SELECT's FROM, and each term's of a set operation.
    void from(d::QueryNode& n) {
        if (n.type == d::QueryNodeType::SELECT_NODE)
            replace_ref(n.Cast<d::SelectNode>().from_table);
        if (n.type == d::QueryNodeType::SET_OPERATION_NODE)
            for (auto& c : n.Cast<d::SetOperationNode>().children) node(*c);
    }
    void ref(d::TableRef& r) {
        if (r.type == d::TableReferenceType::JOIN) {
            auto& j = r.Cast<d::JoinRef>();
            for (auto* side : {&j.left, &j.right}) {
                replace_ref(*side);
                ref(**side);
            }
            if (j.condition) expr(j.condition);
        } else if (r.type == d::TableReferenceType::SUBQUERY) {
            node(*r.Cast<d::SubqueryRef>().subquery->node);
        } else if (r.type == d::TableReferenceType::TABLE_FUNCTION) {
            // pg_catalog.generate_series(...) in a FROM: DuckDB's is in main.
            auto& t = r.Cast<d::TableFunctionRef>();
            if (t.function && t.function->GetExpressionClass() == d::ExpressionClass::FUNCTION) {
                auto& f = t.function->Cast<d::FunctionExpression>();
                if (f.catalog.empty() && f.schema == "pg_catalog" &&
                    !in_pg_catalog(f.function_name))
                    f.schema.clear();
                // `generate_series(...) s`: s is also its one column, as in PostgreSQL
                // (DuckDB's s would be the row).
                if (f.function_name == "generate_series" && !t.alias.empty() &&
                    t.column_name_alias.empty())
                    t.column_name_alias.push_back(t.alias);
            }
        }
    }
    void expr(d::unique_ptr<d::ParsedExpression>& e) {
        if (e->GetExpressionClass() == d::ExpressionClass::CAST) {
            auto& c = e->Cast<d::CastExpression>();
            if (auto text = int2vector_text(c)) {
                // Named by its column, as PostgreSQL names a cast.
                text->SetAlias(e->HasAlias() ? e->GetAlias()
                                             : text->Cast<d::FunctionExpression>()
                                                   .children[0]
                                                   ->Cast<d::ColumnRefExpression>()
                                                   .GetColumnName());
                e = std::move(text);
            } else if (is_text_cast(c) && is_cast_to(*c.child, "regclass")) {
                auto inner = std::move(c.child->Cast<d::CastExpression>().child);
                auto alias = e->GetAlias();
                e = call("regclassout", regclass_of(std::move(inner)));
                e->SetAlias(std::move(alias));
            } else if (cast_name(c) == "regclass") {
                auto alias = e->GetAlias();
                e = regclass_of(std::move(c.child));
                e->SetAlias(std::move(alias));
            } else if (is_text_cast(c) && is_cast_to(*c.child, "regtype")) {
                // x::regtype::text: the type's name.
                auto inner = std::move(c.child->Cast<d::CastExpression>().child);
                auto alias = e->GetAlias();
                d::vector<d::unique_ptr<d::ParsedExpression>> args;
                args.push_back(std::move(inner));
                args.push_back(d::make_uniq<d::ConstantExpression>(d::Value()));
                e = d::make_uniq<d::FunctionExpression>("", "pg_catalog", "format_type",
                                                        std::move(args));
                e->SetAlias(std::move(alias));
            } else if (is_text_cast(c) && is_cast_to(*c.child, "regnamespace")) {
                auto inner = std::move(c.child->Cast<d::CastExpression>().child);
                auto alias = e->GetAlias();
                e = call("sluice_pg_regnamespace_out", std::move(inner));
                e->SetAlias(std::move(alias));
            } else if (cast_name(c) == "oid" || cast_name(c) == "regtype" ||
                       cast_name(c) == "regnamespace") {
                c.cast_type = d::LogicalType::BIGINT;
            }
        }
        if (e->GetExpressionClass() == d::ExpressionClass::FUNCTION) {
            auto& f = e->Cast<d::FunctionExpression>();
            if (f.catalog.empty() && f.schema == "pg_catalog" && !in_pg_catalog(f.function_name))
                f.schema.clear();
            // PostgreSQL's json_build_object(k, v, ...) is DuckDB's json_object.
            if (f.function_name == "json_build_object" && f.schema.empty())
                f.function_name = "json_object";
            if (tilde_searches && f.function_name == "regexp_full_match" && f.schema.empty())
                f.function_name = "regexp_matches";
        }
        if (auto contains = any_of_list(*e)) {
            contains->SetAlias(e->GetAlias());
            e = std::move(contains);
        }
        if (auto like = like_with_escape(*e)) {
            like->SetAlias(e->GetAlias());
            e = std::move(like);
        }
        if (e->GetExpressionClass() == d::ExpressionClass::SUBQUERY)
            node(*e->Cast<d::SubqueryExpression>().subquery->node);
        d::ParsedExpressionIterator::EnumerateChildren(
            *e, [this](d::unique_ptr<d::ParsedExpression>& c) { expr(c); });
    }
};

// ---- macros ----

// PostgreSQL's name of a type by its OID and typmod (format_type), for the types the
// catalog lists (sql::pg_types(), pg_type's rows: pg_types.h).
std::string format_type_sql() {
    std::string names;
    for (const auto& t : pg_types()) names += fmt::format(" WHEN {} THEN '{}'", t.oid, t.format);
    return R"(
CASE WHEN type_oid IS NULL THEN NULL
     WHEN type_oid = 1043 AND typemod > 4 THEN 'character varying(' || (typemod - 4) || ')'
     WHEN type_oid = 1042 AND typemod > 4 THEN 'character(' || (typemod - 4) || ')'
     WHEN type_oid = 1700 AND typemod > 4
       THEN 'numeric(' || ((typemod - 4) >> 16) || ',' || ((typemod - 4) & 65535) || ')'
     ELSE CASE type_oid)" +
           names + R"( ELSE '???' END
END)";
}

// A relation's OID by name, as PostgreSQL's regclass input: `schema.name` or a name on the
// search path (the current schema, pg_catalog, then kafka_topics, where the topics are);
// PostgreSQL's own OIDs for its catalog tables, which tools compare with classoid.
constexpr const char* to_regclass_sql = R"(
coalesce((SELECT rel_c.oid FROM pg_catalog.pg_class rel_c JOIN pg_catalog.pg_namespace rel_n ON rel_n.oid = rel_c.relnamespace
 WHERE CASE WHEN contains(replace(name, '"', ''), '.')
            THEN rel_n.nspname = split_part(replace(name, '"', ''), '.', 1)
                 AND rel_c.relname = split_part(replace(name, '"', ''), '.', 2)
            ELSE rel_c.relname = replace(name, '"', '')
                 AND rel_n.nspname IN (current_schema(), 'pg_catalog', 'kafka_topics') END
 ORDER BY rel_n.nspname = current_schema() DESC, rel_n.nspname = 'pg_catalog' DESC LIMIT 1),
         CASE regexp_replace(name, '^"?pg_catalog"?\."?|"', '', 'g')
              WHEN 'pg_type' THEN 1247 WHEN 'pg_attribute' THEN 1249 WHEN 'pg_proc' THEN 1255
              WHEN 'pg_class' THEN 1259 WHEN 'pg_database' THEN 1262
              WHEN 'pg_constraint' THEN 2606 WHEN 'pg_index' THEN 2610
              WHEN 'pg_namespace' THEN 2615 END))";

constexpr const char* regclassin_sql =
    R"(coalesce(pg_catalog.to_regclass(name), pg_catalog.regclass_missing(name)))";

// The error of a name no relation has: PostgreSQL's, undefined_table (42P01).
void regclass_missing(d::DataChunk& args, d::ExpressionState&, d::Vector&) {
    const auto v = args.data[0].GetValue(0);
    throw d::CatalogException("relation \"%s\" does not exist", v.IsNull() ? "" : v.ToString());
}

// (The aliases rel_c and rel_n: a macro's argument is an expression of the caller's, which
// may name its own c and n.)
// A relation's name as regclass prints it: qualified when not on the search path; the
// OID itself for none.
constexpr const char* regclassout_sql = R"(
coalesce((SELECT CASE WHEN rel_n.nspname IN (current_schema(), 'pg_catalog') THEN rel_c.relname
                      ELSE rel_n.nspname || '.' || rel_c.relname END
          FROM pg_catalog.pg_class rel_c JOIN pg_catalog.pg_namespace rel_n ON rel_n.oid = rel_c.relnamespace
          WHERE rel_c.oid = rel_oid), CAST(rel_oid AS VARCHAR)))";

// The current database, with the columns psql's \l reads (owner 10, whom pg_get_userbyid
// names; UTF8, whose number is 6; C collation, libc provider).
constexpr const char* pg_database_sql = R"(
SELECT database_oid AS oid, database_name AS datname, 10 AS datdba, 6 AS encoding,
       'c' AS datlocprovider, false AS datistemplate, true AS datallowconn,
       -1 AS datconnlimit, 0 AS datfrozenxid, 0 AS datminmxid, 1663 AS dattablespace,
       'C' AS datcollate, 'C' AS datctype, CAST(NULL AS VARCHAR) AS daticulocale,
       CAST(NULL AS VARCHAR) AS daticurules, CAST(NULL AS VARCHAR) AS datcollversion,
       CAST(NULL AS VARCHAR[]) AS datacl
FROM duckdb_databases() WHERE database_name = current_database())";

// The current database's schemas and the catalog's own two, once each (DuckDB's
// pg_namespace has only the first, its schemata every attached database's).
#define SLUICE_PG_SCHEMAS                                                                  \
    " FROM duckdb_schemas() WHERE database_name = current_database() OR (database_name = " \
    "'system' AND schema_name IN ('information_schema', 'pg_catalog'))"
constexpr const char* schemata_sql =
    "SELECT current_database() AS catalog_name, schema_name, 'sluice' AS schema_owner, "
    "CAST(NULL AS VARCHAR) AS default_character_set_catalog, "
    "CAST(NULL AS VARCHAR) AS default_character_set_schema, "
    "CAST(NULL AS VARCHAR) AS default_character_set_name, CAST(NULL AS VARCHAR) AS "
    "sql_path" SLUICE_PG_SCHEMAS;
constexpr const char* pg_namespace_sql =
    "SELECT oid, schema_name AS nspname, 0 AS nspowner, CAST(NULL AS VARCHAR[]) AS "
    "nspacl" SLUICE_PG_SCHEMAS;
#undef SLUICE_PG_SCHEMAS

void scalar_macro(d::ExtensionLoader& loader, const d::DefaultMacro& m) {
    auto info = d::DefaultFunctionGenerator::CreateInternalMacroInfo(m);
    info->on_conflict = d::OnCreateConflict::REPLACE_ON_CONFLICT;
    loader.RegisterFunction(*info);
}

void table_macro(d::ExtensionLoader& loader, const d::DefaultTableMacro& m) {
    auto info = d::DefaultTableFunctionGenerator::CreateTableMacroInfo(m);
    info->internal = true;
    info->on_conflict = d::OnCreateConflict::REPLACE_ON_CONFLICT;
    loader.RegisterFunction(*info);
}

}  // namespace

void pg_operator_text(std::string& sql) {
    std::string op;
    for (size_t i = 0; i < sql.size();) {
        if (const auto end = skip_quoted(sql, i); end != i) {
            i = end;
        } else if (const auto e = pg_operator_at(sql, i, op)) {
            sql.replace(i, e - i, op + std::string(e - i - op.size(), ' '));
            i = e;
        } else if (const auto q = qualified_cast_at(sql, i)) {
            std::fill(sql.begin() + static_cast<std::ptrdiff_t>(i + 2),
                      sql.begin() + static_cast<std::ptrdiff_t>(q), ' ');
            i = q;
        } else if (const auto c = default_collate_at(sql, i)) {
            std::fill(sql.begin() + static_cast<std::ptrdiff_t>(i),
                      sql.begin() + static_cast<std::ptrdiff_t>(c), ' ');
            i = c;
        } else {
            ++i;
        }
    }
}

void pg_catalog_statement(duckdb::SQLStatement& s, std::string_view text) {
    if (s.type != d::StatementType::SELECT_STATEMENT) return;
    rewriter r;
    std::string lower(text);
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char x) { return static_cast<char>(std::tolower(x)); });
    r.tilde_searches = lower.find("regexp_full_match") == std::string::npos;
    r.node(*s.Cast<d::SelectStatement>().node);
}

void register_pg_catalog(duckdb::DatabaseInstance& db) {
    d::ExtensionLoader loader(db, "sluice_pg_catalog");
    const auto format_type = format_type_sql();
    scalar_macro(loader, {"pg_catalog",
                          "format_type",
                          {"type_oid", "typemod", nullptr},
                          {},
                          format_type.c_str()});
    scalar_macro(loader, {"pg_catalog",
                          "pg_encoding_to_char",
                          {"encoding", nullptr},
                          {},
                          "CASE encoding WHEN 6 THEN 'UTF8' WHEN 0 THEN 'SQL_ASCII' ELSE '' END"});
    // Volatile: never folded while a statement is planned, called only for a missing name.
    d::CreateScalarFunctionInfo missing(d::ScalarFunction(
        "regclass_missing", {d::LogicalType::VARCHAR}, d::LogicalType::BIGINT, regclass_missing,
        nullptr, nullptr, nullptr, nullptr, d::LogicalType(d::LogicalTypeId::INVALID),
        d::FunctionStability::VOLATILE));
    missing.schema = "pg_catalog";
    missing.internal = true;
    missing.on_conflict = d::OnCreateConflict::REPLACE_ON_CONFLICT;
    loader.RegisterFunction(std::move(missing));
    scalar_macro(loader, {"pg_catalog", "to_regclass", {"name", nullptr}, {}, to_regclass_sql});
    scalar_macro(loader, {"pg_catalog", "regclassin", {"name", nullptr}, {}, regclassin_sql});
    scalar_macro(loader, {"pg_catalog", "regclassout", {"rel_oid", nullptr}, {}, regclassout_sql});
    table_macro(loader, {"pg_catalog", "pg_database_rows", {nullptr}, {}, pg_database_sql});
    table_macro(loader, {"pg_catalog", "information_schema_schemata", {nullptr}, {}, schemata_sql});
    table_macro(loader, {"pg_catalog", "pg_namespace_rows", {nullptr}, {}, pg_namespace_sql});
    scalar_macro(loader, {"pg_catalog",
                          "sluice_pg_regnamespace_out",
                          {"ns", nullptr},
                          {},
                          "coalesce((SELECT nspname FROM pg_catalog.pg_namespace_rows() "
                          "WHERE oid = ns), CAST(ns AS VARCHAR))"});
    register_pg_relations(loader);
    register_pg_sizes(loader);
    std::call_once(pg_functions_once, [&db] {
        d::Connection con(db);
        auto r = con.Query(
            "SELECT DISTINCT function_name FROM duckdb_functions() WHERE schema_name = "
            "'pg_catalog'");
        if (r->HasError()) r->ThrowError();
        for (d::idx_t i = 0; i < r->RowCount(); ++i)
            pg_functions.insert(r->GetValue(0, i).ToString());
    });
}

}  // namespace sluice::sql::duck
