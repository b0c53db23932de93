"""`sluice serve --config FILE` is parsed strictly (TOML): a syntax error, an unknown key
or a value of the wrong type fails with the file, line and reason, with a non-zero exit
and before any directory is made; so does a port already in use."""

import os
import re
import socket
import subprocess

import conftest
import kproto as K

TIMEOUT = 20


def serve(args, cwd):
    """Runs `sluice serve ARGS` in `cwd`, which must fail; returns (rc, stderr)."""
    proc = subprocess.run([conftest.require_binary(), "serve"] + [str(a) for a in args], cwd=cwd,
                          stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          timeout=TIMEOUT)
    assert not proc.stdout.strip(), "a refused start printed %r" % proc.stdout
    return proc.returncode, proc.stderr.decode("utf-8", "replace")


def assert_refused(tmp_path, text, pattern, extra=()):
    """The file `text` is refused with a message matching `pattern`; no directory appears."""
    cfg = tmp_path / "sluice.toml"
    cfg.write_text(text)
    before = sorted(os.listdir(tmp_path))
    rc, err = serve(["--config", cfg, "--listen", "127.0.0.1:0"] + list(extra), cwd=tmp_path)
    assert rc != 0, err
    assert re.search(pattern, err), "expected /%s/ in:\n%s" % (pattern, err)
    assert sorted(os.listdir(tmp_path)) == before, "the refused start made %r" % (
        set(os.listdir(tmp_path)) - set(before))
    return err


def test_unterminated_string_is_refused_with_its_line(tmp_path):
    text = 'log-level = "info"\ndata-dir = "elsewhere\nsql-timeout-ms = 1000\n'
    err = assert_refused(tmp_path, text, re.escape(str(tmp_path / "sluice.toml")) + r":2:\d+: .*string")
    assert "data" not in os.listdir(tmp_path) and "elsewhere" not in os.listdir(tmp_path), err


def test_unknown_key_is_refused_with_its_line(tmp_path):
    assert_refused(tmp_path, 'listen = ["127.0.0.1:0"]\n\nlisten-adress = "x"\n',
                   r"sluice\.toml:3:1: unknown key 'listen-adress'")
    assert_refused(tmp_path, '[serve]\ndata-dir = "x"\n', r"sluice\.toml:1:\d+: 'serve' is a table")
    assert_refused(tmp_path, 'config = "other.toml"\n', r"sluice\.toml:1:1: unknown key 'config'")


def test_removed_sqlite_engine_settings_are_refused(tmp_path):
    """The SQLite SQL engine was removed: naming it, in the file or on the command line,
    or its per-session temp bound, stops the start with an error saying so and what to do;
    `duckdb` is still accepted."""
    removed = r"the SQLite SQL engine was removed, DuckDB is the only one: %s.*moves its tables"
    assert_refused(tmp_path, 'sql-engine = "sqlite"\n', r":1:\d+: 'sql-engine': " + removed % "drop this setting")
    assert_refused(tmp_path, 'sql-session-temp-bytes = 1048576\n',
                   r":1:\d+: 'sql-session-temp-bytes': " + removed % "drop this setting: --sql-temp-bytes")
    assert_refused(tmp_path, 'log-level = "info"\n', r"--sql-engine: " + removed % "drop this setting",
                   extra=["--sql-engine", "sqlite"])
    assert_refused(tmp_path, 'sql-engine = "postgres"\n', r"'sql-engine': postgres not in \{duckdb\}")


def test_wrong_types_are_refused_with_their_line(tmp_path):
    cases = [
        ('default-partitions = "3"\n', r":1:\d+: 'default-partitions' wants an integer"),
        ('auto-create-topics = "yes"\n', r":1:\d+: 'auto-create-topics' wants true or false"),
        ('log-level = 3\n', r":1:\d+: 'log-level' wants a string"),
        ('\ndata-dir = ["a", "b"]\n', r":2:\d+: 'data-dir' takes one value, not a list"),
        ('listen = ["127.0.0.1:0", 9092]\n', r":1:\d+: 'listen' wants a string \(or a list of them\)"),
        ('sql-max-rows = -5\n', r":1:\d+: 'sql-max-rows' wants a non-negative integer"),
        ('group-max-size = 0\n', r":1:\d+: 'group-max-size': .*range"),
        ('tls-client-auth = "sometimes"\n', r"tls-client-auth"),
    ]
    for text, pattern in cases:
        assert_refused(tmp_path, text, pattern)


def test_missing_config_file(tmp_path):
    rc, err = serve(["--config", tmp_path / "nope.toml"], cwd=tmp_path)
    assert rc != 0 and "nope.toml" in err, err
    assert os.listdir(tmp_path) == []


def test_port_in_use_fails_before_the_data_dir_is_made(tmp_path):
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen(1)
    port = taken.getsockname()[1]
    try:
        for flags in (["--listen", "127.0.0.1:%d" % port],
                      ["--listen", "127.0.0.1:0", "--pg", "127.0.0.1:%d" % port],
                      ["--listen", "127.0.0.1:0", "--http", "127.0.0.1:%d" % port]):
            rc, err = serve(["--data-dir", tmp_path / "new-data"] + flags, cwd=tmp_path)
            assert rc != 0, err
            assert re.search(r"%s: cannot listen on 127\.0\.0\.1:%d: Address already in use" % (flags[-2], port),
                             err), err
            assert not (tmp_path / "new-data").exists(), flags
    finally:
        taken.close()


def test_every_kind_of_value_still_works(broker_factory, tmp_path):
    """Strings, integers, booleans (false too) and lists from the file reach the broker."""
    cfg = tmp_path / "ok.toml"
    cfg.write_text("\n".join([
        "# comments and blank lines are fine",
        "",
        'auto-create-topics = false',
        'default-partitions = 4',
        'topic-default = ["retention.ms=3600000", "segment.bytes=1048576"]',
        'log-level = "warn"',
        'sql-max-rows = 1000',
    ]) + "\n")
    b = broker_factory(extra_args=["--config", str(cfg), "--auto-create-topics"])
    with K.Conn(b.bootstrap) as conn:
        md = K.metadata_v1(conn, ["made-by-metadata"])
    # The command line's --auto-create-topics wins over the file's false.
    assert len(md["topics"]["made-by-metadata"]["partitions"]) == 4, md["topics"]
    b.stop()
    b2 = broker_factory(extra_args=["--config", str(cfg)])
    with K.Conn(b2.bootstrap) as conn:
        md = K.metadata_v1(conn, ["not-made"])
    assert md["topics"]["not-made"]["error"] == 3, md["topics"]   # UNKNOWN_TOPIC_OR_PARTITION


def serve_flags():
    """(name, kind, default) of every long flag `serve --help` lists; kind is "switch",
    "list", "int" or "text"; default the text after '=' (None without one)."""
    proc = subprocess.run([conftest.require_binary(), "serve", "--help"], stdout=subprocess.PIPE, timeout=TIMEOUT)
    flags = []
    # A type may carry its check: ":INT in [1 - 10]" (a range) or ":{uniform,range}" (a set).
    for m in re.finditer(r"^\s+(?:-\w,)?--([a-z0-9-]+)(?: ([A-Z]+)(?::(?:[A-Z]+ in \[[^\]\n]*\]|\{[^}\n]*\}))?(?:=(\S+))?( \.\.\.)?)?",
                         proc.stdout.decode(), re.M):
        name, type_, default, many = m.groups()
        if name in ("help", "config"):
            continue
        kind = "switch" if type_ is None else "list" if many else "int" if type_ in ("INT", "UINT") else "text"
        flags.append((name, kind, default))
    assert len(flags) > 30, flags
    return flags


def test_every_serve_flag_is_a_documented_config_key(secure_broker_factory, tmp_path):
    """A file giving every flag of `serve --help` its default starts a broker, and every
    flag is in docs/configuration.md's table."""
    docs = (conftest.Path(__file__).resolve().parents[2] / "docs" / "configuration.md").read_text()
    undocumented = [n for n, _, _ in serve_flags() if "`--%s" % n not in docs]
    assert not undocumented, "flags missing from docs/configuration.md: %r" % undocumented
    lines = []
    for name, kind, default in serve_flags():
        if name == "listen":
            value = '["127.0.0.1:0"]'
        elif name == "data-dir":
            value = '"%s"' % (tmp_path / "every-key-data")
        elif kind == "switch":
            value = "false"
        elif kind == "int" and default is None:
            continue  # no default to give: a removed flag (test_removed_sqlite_engine_settings_are_refused)
        elif kind == "int":
            value = default
        elif kind == "list":
            value = "[%s]" % ", ".join('"%s"' % v for v in (default or "[]").strip("[]").split(",") if v)
        else:
            value = '"%s"' % (default or "")
        lines.append("%s = %s" % (name, value))
    cfg = tmp_path / "every.toml"
    cfg.write_text("\n".join(lines) + "\n")
    b = secure_broker_factory(None, kafka_lines=1, data_dir_flag=False, extra_args=["--config", str(cfg)])
    with K.Conn(b.bootstrap) as conn:
        err, apis = K.api_versions_v0(conn)
    assert err == 0 and 0 in apis
    assert (tmp_path / "every-key-data" / "catalog.db").exists()
