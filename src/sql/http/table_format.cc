#include "sql/http/table_format.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "sql/http/result_format.h"

namespace sluice::sql::http {
namespace {

// Text with control characters escaped and ill-formed UTF-8 replaced by U+FFFD.
std::string printable(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    for (char ch : scrub_utf8(s)) {  // controls are ASCII: escaping after scrubbing is safe
        const auto c = static_cast<unsigned char>(ch);
        if (c >= 0x20 && c != 0x7f) {
            out += ch;
            continue;
        }
        switch (c) {
            case '\n':
                out += "\\n";
                break;
            case '\r':
                out += "\\r";
                break;
            case '\t':
                out += "\\t";
                break;
            default:
                out += fmt::format("\\x{:02x}", c);
        }
    }
    return out;
}

bool is_number(const value& v) {
    return v.index() == 1 || v.index() == 2;
}

void pad(std::string& out, size_t n) {
    out.append(n, ' ');
}

void rstrip_line(std::string& line) {
    while (!line.empty() && line.back() == ' ') line.pop_back();
}

}  // namespace

std::string table_cell(const value& v) {
    switch (v.index()) {
        case 0:
            return {};
        case 1:
            return std::to_string(std::get<int64_t>(v));
        case 2: {
            double d = std::get<double>(v);
            if (std::isnan(d)) return "NaN";
            if (std::isinf(d)) return d > 0 ? "Infinity" : "-Infinity";
            return format_real(d);
        }
        case 3:
            return printable(std::get<std::string>(v));
        default: {
            auto b = as_chars(std::get<bytes>(v));
            if (is_valid_utf8(b)) return printable(b);
            std::string hex = "\\x";
            for (char c : b) hex += fmt::format("{:02x}", static_cast<unsigned char>(c));
            return hex;
        }
    }
}

size_t display_width(std::string_view s) {
    // Code points: every byte that does not continue a sequence.
    return static_cast<size_t>(std::count_if(
        s.begin(), s.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xc0) != 0x80; }));
}

std::string render_table(const std::vector<column>& cols,
                         const std::vector<std::vector<value>>& rows) {
    std::vector<std::string> names;
    std::vector<size_t> width;
    for (const auto& c : cols) {
        names.push_back(printable(c.name));
        width.push_back(display_width(names.back()));
    }
    std::vector<std::vector<std::string>> cells;
    cells.reserve(rows.size());
    for (const auto& r : rows) {
        auto& line = cells.emplace_back();
        for (size_t i = 0; i < cols.size(); ++i) {
            line.push_back(i < r.size() ? table_cell(r[i]) : std::string());
            width[i] = std::max(width[i], display_width(line.back()));
        }
    }
    std::string out, line;
    // Header: names centred.
    for (size_t i = 0; i < cols.size(); ++i) {
        if (i) line += "|";
        size_t space = width[i] - display_width(names[i]);
        pad(line, 1 + space / 2);
        line += names[i];
        pad(line, space - space / 2 + 1);
    }
    rstrip_line(line);
    out += line + "\n";
    line.clear();
    for (size_t i = 0; i < cols.size(); ++i) {
        if (i) line += "+";
        line.append(width[i] + 2, '-');
    }
    out += line + "\n";
    for (size_t r = 0; r < rows.size(); ++r) {
        line.clear();
        for (size_t i = 0; i < cols.size(); ++i) {
            if (i) line += "|";
            const std::string& cell = cells[r][i];
            size_t space = width[i] - display_width(cell);
            bool right = i < rows[r].size() && is_number(rows[r][i]);
            pad(line, 1 + (right ? space : 0));
            line += cell;
            pad(line, 1 + (right ? 0 : space));
        }
        rstrip_line(line);
        out += line + "\n";
    }
    out += rows.size() == 1 ? "(1 row)\n" : "(" + std::to_string(rows.size()) + " rows)\n";
    return out;
}

std::string render_command(std::string_view command, int64_t changes) {
    std::string tag = command.empty() ? "OK" : std::string(command);
    if (command == "INSERT" || command == "UPDATE" || command == "DELETE" || command == "REPLACE")
        tag += " " + std::to_string(changes);
    return tag + "\n";
}

}  // namespace sluice::sql::http
