#include "app/password_input.h"

#include <termios.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>

namespace sluice::app {
namespace {

void strip_line_end(std::string& line) {
    while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.pop_back();
}

// One line from the terminal on stdin with echo off; the prompt and the newline the
// user does not see go to stderr, so that stdout keeps only the command's output.
result<std::string> prompt_hidden(const std::string& prompt) {
    termios saved{};
    if (tcgetattr(STDIN_FILENO, &saved) != 0)
        return {errc::io_error, std::string("terminal: ") + std::strerror(errno)};
    termios quiet = saved;
    quiet.c_lflag &= ~static_cast<tcflag_t>(ECHO);
    // Echo goes off before the prompt shows, so that nothing typed after it is echoed;
    // TCSAFLUSH drops what was typed before it, as getpass() does.
    if (tcsetattr(STDIN_FILENO, TCSAFLUSH, &quiet) != 0)
        return {errc::io_error, std::string("terminal: ") + std::strerror(errno)};
    std::fprintf(stderr, "%s: ", prompt.c_str());
    std::fflush(stderr);
    std::string line;
    bool got = static_cast<bool>(std::getline(std::cin, line));
    tcsetattr(STDIN_FILENO, TCSAFLUSH, &saved);
    std::fputc('\n', stderr);
    if (!got) return {errc::invalid_argument, "no password typed (end of input)"};
    strip_line_end(line);
    return line;
}

}  // namespace

result<std::string> read_new_password(const std::string& what) {
    if (isatty(STDIN_FILENO) == 0) {
        std::string line;
        if (!std::getline(std::cin, line)) line.clear();
        strip_line_end(line);
        if (line.empty())
            return {errc::invalid_argument,
                    "no password on stdin (the first line is the password)"};
        return line;
    }
    auto first = prompt_hidden(what);
    if (!first) return first;
    if (first->empty()) return {errc::invalid_argument, "the password must not be empty"};
    auto again = prompt_hidden("again, to confirm");
    if (!again) return again;
    if (*again != *first) return {errc::invalid_argument, "the passwords do not match"};
    return first;
}

}  // namespace sluice::app
