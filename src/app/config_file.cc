#include "app/config_file.h"

#include <fmt/format.h>
#include <toml++/toml.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <optional>
#include <set>

namespace sluice::app {
namespace {

std::string where(const std::string& file, const toml::source_region& r) {
    return fmt::format("{}:{}:{}", file, r.begin.line, r.begin.column);
}

// The flag value of one TOML value for an option of CLI11 type `type` ("INT", "UINT",
// "FLOAT", "TEXT"; "" for a flag); nullopt when the TOML type does not fit, so that a
// file saying `default-partitions = "3"` is told so with its line.
std::optional<std::string> flag_value(const toml::node& v, std::string_view type) {
    if (type.empty()) {  // a switch: true or false
        if (auto b = v.value_exact<bool>()) return *b ? "true" : "false";
        return std::nullopt;
    }
    if (type.starts_with("INT") || type.starts_with("UINT")) {
        auto i = v.value_exact<int64_t>();
        if (!i || (type.starts_with("UINT") && *i < 0)) return std::nullopt;
        return std::to_string(*i);
    }
    if (type.starts_with("FLOAT")) {
        if (auto d = v.value<double>()) return fmt::format("{}", *d);
        return std::nullopt;
    }
    if (auto s = v.value_exact<std::string>()) return *s;
    return std::nullopt;
}

std::string_view expected(std::string_view type) {
    if (type.empty()) return "true or false";
    if (type.starts_with("UINT")) return "a non-negative integer";
    if (type.starts_with("INT")) return "an integer";
    if (type.starts_with("FLOAT")) return "a number";
    return "a string";
}

// The flags of one `key = value` line, or why it is wrong.
result<std::vector<std::string>> flags_of(const std::string& file, const std::string& key,
                                          const toml::node& value, CLI::Option& opt) {
    const std::string flag = "--" + key;
    // CLI11 names a switch's type "" and others by their value ("INT", "TEXT:{a,b}", ...).
    const bool is_switch = opt.get_items_expected_max() == 0;
    const std::string type = is_switch ? "" : opt.get_type_name();
    const bool repeatable = opt.get_expected_max() > 1;
    std::vector<const toml::node*> items;
    if (const auto* arr = value.as_array()) {
        if (!repeatable)
            return {errc::invalid_argument, fmt::format("{}: '{}' takes one value, not a list",
                                                        where(file, value.source()), key)};
        for (const auto& item : *arr) items.push_back(&item);
    } else {
        items.push_back(&value);
    }
    std::vector<std::string> out;
    for (const auto* item : items) {
        auto text = flag_value(*item, type);
        if (!text)
            return {errc::invalid_argument,
                    fmt::format("{}: '{}' wants {}{}", where(file, item->source()), key,
                                expected(type), repeatable ? " (or a list of them)" : "")};
        // The option's own checks (ranges, choices), here so that the error has its line.
        for (int i = 0;; ++i) {
            CLI::Validator* check = nullptr;
            try {
                check = opt.get_validator(i);
            } catch (const CLI::OptionNotFound&) {
                break;
            }
            std::string copy = *text;
            if (auto why = (*check)(copy); !why.empty())
                return {errc::invalid_argument,
                        fmt::format("{}: '{}': {}", where(file, item->source()), key, why)};
        }
        // CLI11 takes `--flag=` as a flag without its value; an empty one goes apart.
        if (text->empty() && !is_switch) {
            out.push_back(flag);
            out.push_back({});
        } else {
            out.push_back(flag + "=" + *text);
        }
    }
    return out;
}

// Every setting of the file as flags, skipping the options in `given`.
result<std::vector<std::string>> file_flags(const std::string& file, CLI::App& serve_cmd,
                                            const std::set<const CLI::Option*>& given) {
    std::ifstream in(file, std::ios::binary);
    if (!in)
        return {errc::not_found, fmt::format("cannot read {}: {}", file, std::strerror(errno))};
    toml::table doc;
    try {
        doc = toml::parse(in, file);
    } catch (const toml::parse_error& e) {
        return {errc::invalid_argument,
                fmt::format("{}: {}", where(file, e.source()), e.description())};
    }
    std::vector<std::string> out;
    for (const auto& [k, v] : doc) {
        const std::string key(k.str());
        CLI::Option* opt =
            key == "config" || key == "help" ? nullptr : serve_cmd.get_option_no_throw("--" + key);
        if (v.is_table())
            return {errc::invalid_argument,
                    fmt::format("{}: '{}' is a table; settings are top-level keys (the long flag "
                                "names of `sluice serve`)",
                                where(file, k.source()), key)};
        if (opt == nullptr)
            return {errc::invalid_argument,
                    fmt::format("{}: unknown key '{}': keys are the long flag names of `sluice "
                                "serve` without the dashes (see sluice serve --help)",
                                where(file, k.source()), key)};
        auto flags = flags_of(file, key, v, *opt);
        if (!flags) return flags.err();
        if (given.count(opt) != 0) continue;  // the command line's setting wins
        out.insert(out.end(), flags->begin(), flags->end());
    }
    return out;
}

}  // namespace

result<std::vector<std::string>> with_config_file(std::vector<std::string> args,
                                                  CLI::App& serve_cmd) {
    auto serve = std::find(args.begin(), args.end(), "serve");
    if (serve == args.end()) return args;
    const auto at = serve - args.begin() + 1;  // where the file's flags go
    std::string file;
    for (auto it = serve + 1; it != args.end(); ++it) {
        if (*it == "--config" && it + 1 != args.end()) {
            file = *(it + 1);
            args.erase(it, it + 2);
            break;
        }
        if (it->rfind("--config=", 0) == 0) {
            file = it->substr(9);
            args.erase(it);
            break;
        }
    }
    if (file.empty()) return args;
    // The options the command line sets: `--name`, `--name=value`, `-n`, `-nvalue`.
    std::set<const CLI::Option*> given;
    for (auto a = args.begin() + at; a != args.end(); ++a) {
        if (a->size() < 2 || (*a)[0] != '-' || *a == "--") continue;
        const std::string name = (*a)[1] == '-' ? a->substr(0, a->find('=')) : a->substr(0, 2);
        if (const CLI::Option* opt = serve_cmd.get_option_no_throw(name)) given.insert(opt);
    }
    auto from_file = file_flags(file, serve_cmd, given);
    if (!from_file) return from_file.err();
    args.insert(args.begin() + at, from_file->begin(), from_file->end());
    return args;
}

}  // namespace sluice::app
