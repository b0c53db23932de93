#include "app/usage_errors.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <optional>

namespace sluice::app {
namespace {

std::vector<CLI::App*> commands_of(CLI::App& cmd) {
    return cmd.get_subcommands([](CLI::App*) { return true; });
}

bool has_positionals(const CLI::App& cmd) {
    auto pos = cmd.get_options([](const CLI::Option* o) { return !o->nonpositional(); });
    return !pos.empty();
}

// The name in `names` closest to `typed`, when it is close enough to be a typo: at most
// a third of the name's letters wrong (at least one), so "--lisen" finds "--listen"
// and "--foo" finds nothing.
std::optional<std::string> closest(std::string_view typed, const std::vector<std::string>& names) {
    std::optional<std::string> best;
    size_t best_distance = 0;
    for (const auto& n : names) {
        const size_t d = edit_distance(typed, n);
        const size_t allowed = std::max<size_t>(1, std::max(typed.size(), n.size()) / 3);
        if (d <= allowed && (!best || d < best_distance)) {
            best = n;
            best_distance = d;
        }
    }
    return best;
}

std::vector<std::string> command_names(CLI::App& cmd) {
    std::vector<std::string> out;
    for (auto* s : commands_of(cmd)) out.push_back(s->get_name());
    return out;
}

std::vector<std::string> flag_names(const CLI::App& cmd) {
    std::vector<std::string> out;
    for (const auto* o : cmd.get_options()) {
        for (const auto& l : o->get_lnames()) out.push_back("--" + l);
        for (const auto& s : o->get_snames()) out.push_back("-" + s);
    }
    return out;
}

std::string joined(const std::vector<std::string>& names) {
    std::string out;
    for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
    return out;
}

// What the arguments name: the deepest command, and the first word that is no command
// where one was expected, or the flags that command does not have.
struct reading {
    CLI::App* cmd = nullptr;
    std::string path = "sluice";
    std::optional<std::string> unknown_command;
    std::vector<std::string> unknown_flags;
};

reading read_args(CLI::App& app, const std::vector<std::string>& args) {
    reading r;
    r.cmd = &app;
    for (size_t i = 0; i < args.size(); ++i) {
        const std::string& a = args[i];
        if (a == "--") break;
        if (a.size() > 1 && a[0] == '-') {
            const bool is_long = a.starts_with("--");
            const size_t eq = a.find('=');
            // "-dDIR" is -d with its value attached.
            const std::string name = is_long ? a.substr(0, eq) : a.substr(0, 2);
            const CLI::Option* o = r.cmd->get_option_no_throw(name);
            if (!o) {
                r.unknown_flags.push_back(name);
                continue;
            }
            const bool value_attached = is_long ? eq != std::string::npos : a.size() > 2;
            if (!value_attached && o->get_items_expected_max() > 0) ++i;  // its value
            continue;
        }
        auto subs = commands_of(*r.cmd);
        if (subs.empty()) continue;  // a positional argument of the command
        auto it = std::find_if(subs.begin(), subs.end(),
                               [&](const CLI::App* s) { return s->get_name() == a; });
        if (it != subs.end()) {
            r.cmd = *it;
            r.path += " " + a;
        } else if (!has_positionals(*r.cmd)) {
            r.unknown_command = a;
            break;
        }
    }
    return r;
}

}  // namespace

size_t edit_distance(std::string_view a, std::string_view b) {
    std::vector<size_t> row(b.size() + 1);
    for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
    for (size_t i = 1; i <= a.size(); ++i) {
        size_t diagonal = row[0];
        row[0] = i;
        for (size_t j = 1; j <= b.size(); ++j) {
            const size_t above = row[j];
            row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1])});
            diagonal = above;
        }
    }
    return row[b.size()];
}

int report_parse_error(CLI::App& app, const CLI::ParseError& e,
                       const std::vector<std::string>& args) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --help-all
    const reading r = read_args(app, args);
    const std::string help = fmt::format("Run '{} --help' for more information.", r.path);
    if (r.unknown_command) {
        const auto names = command_names(*r.cmd);
        auto near = closest(*r.unknown_command, names);
        std::fprintf(stderr, "%s: unknown command '%s'%s; the commands are: %s\n%s\n",
                     r.path.c_str(), r.unknown_command->c_str(),
                     near ? fmt::format(" (did you mean '{}'?)", *near).c_str() : "",
                     joined(names).c_str(), help.c_str());
    } else if (!r.unknown_flags.empty()) {
        const auto names = flag_names(*r.cmd);
        for (const auto& f : r.unknown_flags) {
            auto near = closest(f, names);
            std::fprintf(stderr, "%s: unknown option '%s'%s\n", r.path.c_str(), f.c_str(),
                         near ? fmt::format("; did you mean '{}'?", *near).c_str() : "");
        }
        std::fprintf(stderr, "%s\n", help.c_str());
    } else if (!commands_of(*r.cmd).empty()) {
        std::fprintf(stderr, "%s: a command is required: %s\n%s\n", r.path.c_str(),
                     joined(command_names(*r.cmd)).c_str(), help.c_str());
    } else {
        std::fprintf(stderr, "%s: %s\n%s\n", r.path.c_str(), e.what(), help.c_str());
    }
    return usage_exit_code;
}

}  // namespace sluice::app
