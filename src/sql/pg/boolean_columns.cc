#include "sql/pg/boolean_columns.h"

#include <array>
#include <optional>
#include <span>
#include <string>

#include "sql/pg/lexer.h"

namespace sluice::sql::pg {
namespace {

using tokens = std::vector<token>;

// Words that end a select list at the top level.
constexpr std::array<std::string_view, 14> list_ends = {
    "FROM",  "WHERE",     "GROUP",  "HAVING", "ORDER", "LIMIT",  "OFFSET",
    "UNION", "INTERSECT", "EXCEPT", "WINDOW", "FETCH", "INTO", "FOR"};
// Words whose expression is boolean wherever they stand at an item's top level: the
// operators of PostgreSQL's boolean expressions and predicates. (A word inside
// parentheses belongs to a function's arguments or a subquery.)
constexpr std::array<std::string_view, 15> boolean_words = {
    "AND",  "OR",     "NOT",   "IS",      "IN",     "LIKE",    "ILIKE",  "GLOB",
    "REGEXP", "MATCH", "BETWEEN", "EXISTS", "ISNULL", "NOTNULL", "SIMILAR"};
// Operators whose result is boolean; the others (->>, ||, +, ...) are not.
constexpr std::array<std::string_view, 14> boolean_operators = {
    "=", "==", "<>", "!=", "<", ">", "<=", ">=", "~", "!~", "~*", "!~*", "@>", "<@"};

bool any_word(const token& t, std::span<const std::string_view> words) {
    for (auto w : words)
        if (t.is_word(w)) return true;
    return false;
}

bool is_operator_char(const token& t) {
    return t.k == token::kind::punct &&
           std::string_view("<>=!~-+*/%|&#@^").find(t.text[0]) != std::string_view::npos;
}

// How deep t opens (+1) or closes (-1) a nesting: parentheses and CASE ... END.
int nesting(const token& t) {
    if (t.is_punct('(') || t.is_word("CASE")) return 1;
    if (t.is_punct(')') || t.is_word("END")) return -1;
    return 0;
}

bool is_bool_type(const token& t) {
    return t.is_word("BOOL") || t.is_word("BOOLEAN");
}

bool is_boolean_item(std::span<const token> item) {
    // Drop an alias: `expr AS name` (an implicit alias adds no operator).
    for (size_t i = 0, depth = 0; i < item.size(); ++i) {
        if (nesting(item[i]) > 0) ++depth;
        if (nesting(item[i]) < 0 && depth > 0) --depth;
        if (depth == 0 && item[i].is_word("AS")) {
            item = item.first(i);
            break;
        }
    }
    if (item.empty()) return false;
    if (item.size() == 1) return item[0].is_word("TRUE") || item[0].is_word("FALSE");
    // (expr): what is inside, unless it is a subquery.
    if (item.front().is_punct('(') && item.back().is_punct(')')) {
        int depth = 0;
        size_t closes_at = 0;
        for (size_t i = 0; i < item.size(); ++i) {
            depth += nesting(item[i]);
            if (depth == 0) {
                closes_at = i;
                break;
            }
        }
        if (closes_at == item.size() - 1) {
            auto inner = item.subspan(1, item.size() - 2);
            return !inner.empty() && !inner[0].is_word("SELECT") && !inner[0].is_word("WITH") &&
                   is_boolean_item(inner);
        }
    }
    // CAST(x AS BOOLEAN)
    if (item[0].is_word("CAST") && item[1].is_punct('(') && item.back().is_punct(')') &&
        item.size() >= 5 && is_bool_type(item[item.size() - 2]) &&
        item[item.size() - 3].is_word("AS"))
        return true;
    int depth = 0;
    std::optional<bool> last_cast;  // the type of the last top-level `::type`
    for (size_t i = 0; i < item.size(); ++i) {
        const token& t = item[i];
        const int n = nesting(t);
        if (n > 0) ++depth;
        if (depth == 0) {
            if (any_word(t, boolean_words)) return true;
            if (t.is_punct(':') && i + 2 < item.size() && item[i + 1].is_punct(':') &&
                item[i + 1].begin == t.end) {
                last_cast = is_bool_type(item[i + 2]);
                i += 2;
                continue;
            }
            if (is_operator_char(t)) {
                // The operator: adjacent operator characters, less a sign that begins
                // the next operand (`a=-1`).
                size_t j = i + 1;
                while (j < item.size() && is_operator_char(item[j]) &&
                       item[j].begin == item[j - 1].end)
                    ++j;
                std::string op;
                for (size_t k = i; k < j; ++k) op += item[k].text;
                while (op.size() > 1 && (op.back() == '-' || op.back() == '+')) op.pop_back();
                for (auto b : boolean_operators)
                    if (op == b) return true;
                i = j - 1;
                continue;
            }
        }
        if (n < 0) --depth;
    }
    return last_cast.value_or(false);
}

}  // namespace

select_list_types boolean_columns(std::string_view sql) {
    tokens t;
    tokenizer tz(sql);
    for (token x = tz.next(); x.k != token::kind::end; x = tz.next()) {
        if (x.is_punct(';')) break;
        t.push_back(x);
    }
    select_list_types out;
    size_t i = 0;
    if (!t.empty() && t[0].is_word("WITH")) {
        // The main SELECT is the first at the top level: the CTEs are parenthesized.
        for (int depth = 0; i < t.size(); ++i) {
            depth += t[i].is_punct('(') ? 1 : t[i].is_punct(')') ? -1 : 0;
            if (depth == 0 && t[i].is_word("SELECT")) break;
        }
    }
    if (i >= t.size() || !t[i].is_word("SELECT")) return out;
    ++i;
    if (i < t.size() && t[i].is_word("ALL")) ++i;
    if (i < t.size() && t[i].is_word("DISTINCT")) {
        ++i;
        if (i < t.size() && t[i].is_word("ON")) {
            ++i;
            for (int depth = 0; i < t.size(); ++i) {
                depth += nesting(t[i]);
                if (depth == 0) {
                    ++i;
                    break;
                }
            }
        }
    }
    size_t item_start = i;
    int depth = 0;
    auto finish_item = [&](size_t end) {
        std::span<const token> item(t.data() + item_start, end - item_start);
        const bool star = (item.size() == 1 && item[0].is_punct('*')) ||
                          (item.size() == 3 && item[1].is_punct('.') && item[2].is_punct('*'));
        if (star) return false;
        out.boolean.push_back(is_boolean_item(item));
        return true;
    };
    for (; i < t.size(); ++i) {
        depth += nesting(t[i]);
        if (depth != 0) continue;
        if (t[i].is_punct(',')) {
            if (!finish_item(i)) return out;
            item_start = i + 1;
        } else if (any_word(t[i], list_ends) &&
                   !(t[i].is_word("FROM") && i > 0 && t[i - 1].is_word("DISTINCT"))) {
            break;  // (IS [NOT] DISTINCT FROM is an operator)
        }
    }
    if (depth != 0 || !finish_item(i)) return out;
    out.complete = true;
    return out;
}

bool is_boolean_column(const select_list_types& t, size_t i, size_t count) {
    if (t.complete && t.boolean.size() != count) return false;
    return i < t.boolean.size() && t.boolean[i];
}

}  // namespace sluice::sql::pg
