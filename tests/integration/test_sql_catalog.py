"""The catalog that PostgreSQL tools read (docs/sql-pg.md, "Tools"): psql's meta-commands
with their output compared line by line, SQLAlchemy's inspector (Debian's
python3-sqlalchemy 1.4) and the PostgreSQL JDBC driver's DatabaseMetaData (42.7.14), over
a known set-up: a topic, a table with a primary key, a view, a user schema with a table
and an index; and the catalog following topics and tables as they come and go."""

import os
import subprocess

import pytest
import sqlalchemy

import jvm_helpers as J
import sluice_helpers as H
import sql_helpers as S


@pytest.fixture(scope="module")
def b(module_broker_factory):
    broker = module_broker_factory(extra_args=S.SQL_ARGS)
    assert broker.pg, broker.stdout_lines
    H.create_topic(broker.bootstrap, "orders", 2)
    S.psql_ok(broker.pg,
              "CREATE TABLE users(id INTEGER PRIMARY KEY, name TEXT NOT NULL, score REAL)",
              "CREATE VIEW big_scores AS SELECT id, score FROM users WHERE score > 10",
              "CREATE SCHEMA shop",
              "CREATE TABLE shop.items(sku TEXT PRIMARY KEY, qty INTEGER DEFAULT 0, note BLOB)",
              S.create_index("items_qty", "shop", "items", "qty"))
    return broker


def meta(addr, command):
    """psql's output of one meta-command, as a user sees it (aligned, with headers)."""
    host, port = addr.rsplit(":", 1)
    env = dict(os.environ, PGCONNECT_TIMEOUT="10")
    proc = subprocess.run(["psql", "-X", "-h", host, "-p", port, "-d", "sluice", "-U", "test",
                           "-c", command], stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          timeout=S.CALL_TIMEOUT, env=env)
    assert proc.returncode == 0 and proc.stderr == "", (command, proc.stdout, proc.stderr)
    return proc.stdout


def lines(text):
    return text.strip("\n").split("\n")


def psql_table(title, headers, rows, count=True):
    """psql's aligned output (border 1) of rows of text: the title centred over the table,
    each header centred in its column, values left-aligned (the last column's unpadded),
    then the row count."""
    widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(headers)]
    width = sum(widths) + 3 * (len(widths) - 1) + 2

    def centred(text, w):
        left = (w - len(text)) // 2
        return " " * left + text + " " * (w - len(text) - left)

    out = [" " * ((width - len(title)) // 2) + title,
           " " + " | ".join(centred(h, w) for h, w in zip(headers, widths)) + " ",
           "+".join("-" * (w + 2) for w in widths)]
    out += [" " + " | ".join([v.ljust(w) for v, w in zip(r[:-1], widths)] + [r[-1]]) for r in rows]
    if count:
        out.append("(%d row%s)" % (len(rows), "" if len(rows) == 1 else "s"))
    return out


def described(title, columns, footer=()):
    """psql's \\d of a relation: (name, type, nullable, default) per column, then `footer`."""
    return psql_table(title, ["Column", "Type", "Collation", "Nullable", "Default"],
                      [(n, t, "", null, default) for n, t, null, default in columns], count=False) + list(footer)


RELATIONS_PLUS = ["Schema", "Name", "Type", "Owner", "Persistence", "Access method", "Size", "Description"]


def test_list_databases_and_schemas(b):
    assert lines(meta(b.pg, r"\l")) == [
        "                                        List of databases",
        "  Name  | Owner  | Encoding | Collate | Ctype | ICU Locale | Locale Provider | Access privileges ",
        "--------+--------+----------+---------+-------+------------+-----------------+-------------------",
        " sluice | sluice | UTF8     | C       | C     |            | libc            | ",
        "(1 row)",
    ]
    assert lines(meta(b.pg, r"\dn")) == [
        "    List of schemas",
        "     Name     | Owner  ",
        "--------------+--------",
        " kafka_topics | sluice",
        " main         | sluice",
        " shop         | sluice",
        " system       | sluice",
        "(4 rows)",
    ]


def test_list_tables_views_indexes_functions(b):
    assert lines(meta(b.pg, r"\dt")) == [
        "               List of relations",
        "    Schema    |     Name      | Type  | Owner  ",
        "--------------+---------------+-------+--------",
        " kafka_topics | orders        | table | sluice",
        " main         | users         | table | sluice",
        " shop         | items         | table | sluice",
        " system       | acls          | table | sluice",
        " system       | configs       | table | sluice",
        " system       | group_members | table | sluice",
        " system       | group_offsets | table | sluice",
        " system       | groups        | table | sluice",
        " system       | partitions    | table | sluice",
        " system       | policies      | table | sluice",
        " system       | share_groups  | table | sluice",
        " system       | topics        | table | sluice",
        " system       | transactions  | table | sluice",
        "(13 rows)",
    ]
    assert lines(meta(b.pg, r"\dt shop.*")) == [
        "        List of relations",
        " Schema | Name  | Type  | Owner  ",
        "--------+-------+-------+--------",
        " shop   | items | table | sluice",
        "(1 row)",
    ]
    assert lines(meta(b.pg, r"\dv")) == [
        "          List of relations",
        " Schema |    Name    | Type | Owner  ",
        "--------+------------+------+--------",
        " main   | big_scores | view | sluice",
        "(1 row)",
    ]
    assert lines(meta(b.pg, r"\di")) == [
        "              List of relations",
        " Schema |    Name    | Type  | Owner  | Table ",
        "--------+------------+-------+--------+-------",
        " main   | users_pkey | index | sluice | users",
        " shop   | items_pkey | index | sluice | items",
        " shop   | items_qty  | index | sluice | items",
        "(3 rows)",
    ]
    # \df lists functions outside pg_catalog, where all of them are (there are no user
    # functions); a pattern finds them there.
    assert lines(meta(b.pg, r"\df")) == [
        "                       List of functions",
        " Schema | Name | Result data type | Argument data types | Type ",
        "--------+------+------------------+---------------------+------",
        "(0 rows)",
    ]
    # (Its result type: text, DuckDB's functions are typed.)
    assert lines(meta(b.pg, r"\df sluice*")) == psql_table(
        "List of functions", ["Schema", "Name", "Result data type", "Argument data types", "Type"],
        [("pg_catalog", "sluice_last_scan", "text", "", "func")])


def test_plus_forms_sizes_and_view_definition(b):
    """A table's size is the database file's blocks holding its checkpointed data (none for
    this empty table) and an index has none (test_table_size_is_its_blocks); a view shows
    its query."""
    table_size, index_size = "0 bytes", ""
    assert lines(meta(b.pg, r"\dt+ shop.*")) == psql_table("List of relations", RELATIONS_PLUS, [
        ("shop", "items", "table", "sluice", "permanent", "heap", table_size, "")])
    assert lines(meta(b.pg, r"\di+ shop.*")) == psql_table(
        "List of relations", RELATIONS_PLUS[:4] + ["Table"] + RELATIONS_PLUS[4:],
        [("shop", name, "index", "sluice", "items", "permanent", "btree", index_size, "")
         for name in ("items_pkey", "items_qty")])
    # DuckDB keeps a view's query as it parsed it.
    assert lines(meta(b.pg, r"\d+ big_scores"))[-2:] == [
        "View definition:", "SELECT id, score FROM users WHERE (score > 10)"]
    assert lines(meta(b.pg, r"\du"))[-1] == " sluice    | Cannot login | {}"
    assert " sluice | sluice | UTF8     | C       | C     |            | libc            |" in \
        lines(meta(b.pg, r"\l+"))[3]


def test_table_size_is_its_blocks(broker_factory):
    """A table's size in \\dt+ and pg_table_size: the blocks (of 256 KiB) of the database
    file holding its data once checkpointed, as it is when the broker stops; the database's
    size covers it."""
    broker = broker_factory(extra_args=S.SQL_ARGS)
    S.psql_ok(broker.pg, "CREATE TABLE sized AS SELECT n FROM generate_series(1, 100000) AS r(n)")
    broker.restart()
    conn = S.pg_connect(broker.pg)
    try:
        [(size, pretty, database)] = S.pg_rows(
            conn, "SELECT pg_catalog.pg_table_size('sized'::regclass), "
                  "pg_catalog.pg_size_pretty(pg_catalog.pg_table_size('sized'::regclass)), "
                  "pg_catalog.pg_database_size('sluice')")
    finally:
        conn.close()
    unit = 256 * 1024
    assert size > 0 and size % unit == 0 and database >= size, (size, database)
    assert pretty == "%d kB" % (size // 1024), pretty
    row = [ln for ln in lines(meta(broker.pg, r"\dt+ main.*")) if " sized " in ln]
    assert len(row) == 1 and (" %s " % pretty) in row[0], row


def test_describe_table(b):
    # DuckDB's INTEGER and REAL are PostgreSQL's (32-bit); a PRIMARY KEY column is NOT
    # NULL, as in PostgreSQL (test_functions_tools_call).
    integer, real = "integer", "real"
    text_key = "not null"
    assert lines(meta(b.pg, r"\d users")) == described('Table "main.users"', [
        ("id", integer, "not null", ""), ("name", "text", "not null", ""), ("score", real, "", "")],
        ["Indexes:", '    "users_pkey" PRIMARY KEY, btree (id)'])
    assert lines(meta(b.pg, r"\d shop.items")) == described('Table "shop.items"', [
        ("sku", "text", text_key, ""), ("qty", integer, "", "0"), ("note", "bytea", "", "")],
        ["Indexes:", '    "items_pkey" PRIMARY KEY, btree (sku)', '    "items_qty" btree (qty)'])
    # A topic table, by its bare name and qualified; its partition is an INTEGER
    # (information_schema too).
    topic = described('Table "kafka_topics.orders"', [
        (name, t, "", "") for name, t in (
            ("partition", integer), ("offset", "bigint"), ("timestamp_producer", "bigint"),
            ("timestamp_broker", "bigint"), ("key", "bytea"), ("value", "bytea"), ("headers", "text"))])
    assert lines(meta(b.pg, r"\d orders")) == topic
    assert lines(meta(b.pg, r"\d kafka_topics.orders")) == topic
    assert lines(meta(b.pg, r"\d big_scores")) == described('View "main.big_scores"', [
        ("id", integer, "", ""), ("score", real, "", "")])


def test_functions_tools_call(b):
    conn = S.pg_connect(b.pg)
    try:
        assert S.pg_rows(conn, "SELECT current_schema(), current_database(), current_user") == \
            [("main", "sluice", "ANONYMOUS")]
        # A PRIMARY KEY column is NOT NULL in PostgreSQL and DuckDB; INTEGER is their 32-bit
        # integer.
        assert S.pg_rows(conn, "SELECT column_name, data_type, is_nullable FROM information_schema.columns "
                               "WHERE table_schema = 'shop' AND table_name = 'items' ORDER BY ordinal_position") == \
            [("sku", "text", "NO"), ("qty", "integer", "YES"), ("note", "bytea", "YES")]
        assert S.pg_rows(conn, "SELECT schema_name FROM information_schema.schemata ORDER BY 1") == \
            [("information_schema",), ("kafka_topics",), ("main",), ("pg_catalog",), ("shop",), ("system",)]
        assert S.pg_rows(conn, "SELECT 'users'::regclass::text, pg_catalog.format_type(25, -1)") == \
            [("users", "text")]
        assert S.pg_rows(conn, "SELECT relname FROM pg_class WHERE relname ~ '^big_' AND relkind = 'v'") == \
            [("big_scores",)]
        # A relation nobody has is an error, as in PostgreSQL.
        assert "does not exist" in str(S.pg_error(conn, "SELECT 'nope'::regclass"))
        # The tables are the engine's, over HTTP as well.
        assert S.http_rows(b.http, "SELECT table_name FROM information_schema.tables "
                                   "WHERE table_schema = 'shop' AND table_name NOT LIKE '\\_%' ESCAPE '\\' "
                                   "ORDER BY 1") == [["items"]]
        # The catalog is the engine's: it cannot be written.
        assert S.pg_error(conn, "DELETE FROM pg_catalog.pg_type").pgcode == "42501"
        assert S.pg_error(conn, "CREATE SCHEMA pg_catalog").pgcode == "22023"
    finally:
        conn.close()


def test_sqlalchemy_inspector(b):
    host, port = b.pg.rsplit(":", 1)
    engine = sqlalchemy.create_engine("postgresql+psycopg2://test@%s:%s/sluice" % (host, port))
    try:
        insp = sqlalchemy.inspect(engine)
        assert engine.dialect.server_version_info == (15, 0)
        assert insp.default_schema_name == "main"
        assert insp.get_schema_names() == ["information_schema", "kafka_topics", "main", "shop", "system"]
        # (Not DuckDB's bookkeeping tables in main: docs/formats/expansion-duckdb.md.)
        assert insp.get_table_names() == ["users"]
        assert insp.get_table_names("kafka_topics") == ["orders"]
        assert insp.get_view_names() == ["big_scores"]
        # DuckDB's INTEGER is PostgreSQL's (32-bit); a PRIMARY KEY column is NOT NULL
        # (test_functions_tools_call).
        integer = "INTEGER"
        cols = [(c["name"], type(c["type"]).__name__, c["nullable"], c["default"])
                for c in insp.get_columns("items", "shop")]
        assert cols == [("sku", "TEXT", False, None), ("qty", integer, True, "0"),
                        ("note", "BYTEA", True, None)]
        assert [(c["name"], type(c["type"]).__name__) for c in insp.get_columns("orders", "kafka_topics")] == [
            ("partition", integer), ("offset", "BIGINT"), ("timestamp_producer", "BIGINT"),
            ("timestamp_broker", "BIGINT"), ("key", "BYTEA"), ("value", "BYTEA"), ("headers", "TEXT")]
        assert insp.get_pk_constraint("users") == {"constrained_columns": ["id"], "name": "users_pkey"}
        assert insp.get_pk_constraint("items", "shop") == {"constrained_columns": ["sku"], "name": "items_pkey"}
        assert [(i["name"], i["unique"], i["column_names"]) for i in insp.get_indexes("items", "shop")] == \
            [("items_qty", False, ["qty"])]
        # Table reflection, then a query built on it.
        md = sqlalchemy.MetaData()
        items = sqlalchemy.Table("items", md, schema="shop", autoload_with=engine)
        assert [(c.name, str(c.type), c.primary_key) for c in items.columns] == \
            [("sku", "TEXT", True), ("qty", integer, False), ("note", "BYTEA", False)]
        assert [i.name for i in items.indexes] == ["items_qty"]
        orders = sqlalchemy.Table("orders", md, schema="kafka_topics", autoload_with=engine)
        with engine.connect() as conn:
            assert conn.execute(sqlalchemy.select(sqlalchemy.func.count()).select_from(orders)).scalar() == 0
    finally:
        engine.dispose()


def test_sqlalchemy_unique_constraints(b):
    """conkey is an int2[] (OID 1005) in text and in binary, so SQLAlchemy reflects UNIQUE."""
    S.psql_ok(b.pg, "CREATE TABLE shop.accounts(id INTEGER PRIMARY KEY, email TEXT UNIQUE, "
                    "region TEXT, handle TEXT, UNIQUE(region, handle))")
    host, port = b.pg.rsplit(":", 1)
    engine = sqlalchemy.create_engine("postgresql+psycopg2://test@%s:%s/sluice" % (host, port))
    try:
        insp = sqlalchemy.inspect(engine)
        uniques = sorted((u["column_names"], u["name"]) for u in insp.get_unique_constraints("accounts", "shop"))
        # Named as PostgreSQL names them.
        assert uniques == [(["email"], "accounts_email_key"), (["region", "handle"], "accounts_region_handle_key")]
        md = sqlalchemy.MetaData()
        accounts = sqlalchemy.Table("accounts", md, schema="shop", autoload_with=engine)
        assert sorted(tuple(c.name for c in u.columns) for u in accounts.constraints
                      if isinstance(u, sqlalchemy.UniqueConstraint)) == [("email",), ("region", "handle")]
        conn = S.pg_connect(b.pg)
        try:
            # psycopg2 turns a text-format int2[] into a list of ints.
            assert S.pg_rows(conn, "SELECT conkey, contype FROM pg_catalog.pg_constraint WHERE conrelid = "
                                   "'shop.accounts'::regclass ORDER BY conkey") == \
                [([1], "p"), ([2], "u"), ([3, 4], "u")]
            with conn.cursor() as cur:
                cur.execute("SELECT conkey FROM pg_catalog.pg_constraint WHERE conrelid = 0")
                assert cur.description[0].type_code == 1005
        finally:
            conn.close()
    finally:
        engine.dispose()
        S.psql_ok(b.pg, "DROP TABLE shop.accounts")


def test_jdbc_database_metadata(b):
    url = "jdbc:postgresql://%s/sluice?user=test&sslmode=disable" % b.pg
    out = J.run_java("dev.sluice.jvmtests.sql.CatalogMetadata", url, "shop", "items").stdout
    rows = [ln.split("\t") for ln in out.strip("\n").split("\n")]
    assert rows[0] == ["product", "PostgreSQL", "15.0"]
    assert [r[1] for r in rows if r[0] == "schema"] == \
        ["information_schema", "kafka_topics", "main", "pg_catalog", "shop", "system"]
    # (Not DuckDB's bookkeeping tables in main: docs/formats/expansion-duckdb.md.)
    assert [r[1:] for r in rows if r[0] == "table"] == [
        ["kafka_topics", "orders", "TABLE"], ["main", "users", "TABLE"], ["shop", "items", "TABLE"],
        ["system", "acls", "TABLE"], ["system", "configs", "TABLE"], ["system", "group_members", "TABLE"],
        ["system", "group_offsets", "TABLE"],
        ["system", "groups", "TABLE"], ["system", "partitions", "TABLE"], ["system", "policies", "TABLE"],
        ["system", "share_groups", "TABLE"], ["system", "topics", "TABLE"], ["system", "transactions", "TABLE"],
        ["main", "big_scores", "VIEW"]]
    # java.sql.Types: VARCHAR 12, BIGINT -5, INTEGER 4, BINARY -2. (DuckDB's INTEGER is
    # PostgreSQL's int4, and its PRIMARY KEY column NOT NULL.)
    assert [r[1:] for r in rows if r[0] == "column"] == [
        ["sku", "12", "text", "1", "NO"], ["qty", "4", "int4", "2", "YES"],
        ["note", "-2", "bytea", "3", "YES"]]
    assert [r[1:] for r in rows if r[0] == "pk"] == [["sku", "1", "items_pkey"]]


def test_catalog_follows_topics_and_tables(b):
    """A topic created, a table dropped: the next statement's catalog shows it. (Last: it
    adds a topic to the module's broker.)"""
    conn = S.pg_connect(b.pg)
    try:
        # Without the engine's bookkeeping (the expansions' progress, in main).
        listed = "SELECT table_schema, table_name FROM information_schema.tables " \
                 "WHERE table_schema IN ('kafka_topics', 'main') " \
                 "AND table_name NOT LIKE '\\_sluice%' ESCAPE '\\' ORDER BY 1, 2"
        assert S.pg_rows(conn, listed) == [("kafka_topics", "orders"), ("main", "big_scores"),
                                           ("main", "users")]
        H.create_topic(b.bootstrap, "payments", 1)
        S.psql_ok(b.pg, "CREATE TABLE scratch(x INTEGER)")
        S.wait_until("payments in the catalog", lambda: ("kafka_topics", "payments") in S.pg_rows(conn, listed))
        assert S.pg_rows(conn, listed) == [("kafka_topics", "orders"), ("kafka_topics", "payments"),
                                           ("main", "big_scores"), ("main", "scratch"), ("main", "users")]
        S.psql_ok(b.pg, "DROP TABLE scratch")
        assert ("main", "scratch") not in S.pg_rows(conn, listed)
        # OIDs are stable: the same relation has the same OID in every session.
        oid = "SELECT c.oid FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n " \
              "ON n.oid = c.relnamespace WHERE n.nspname = 'shop' AND c.relname = 'items'"
        other = S.pg_connect(b.pg)
        try:
            assert S.pg_rows(conn, oid) == S.pg_rows(other, oid) == \
                [(S.pg_rows(conn, "SELECT 'shop.items'::regclass::oid")[0][0],)]
            # A topic's too.
            topic = oid.replace("'shop'", "'kafka_topics'").replace("'items'", "'orders'")
            assert S.pg_rows(conn, topic) == S.pg_rows(other, topic) == \
                [(S.pg_rows(conn, "SELECT 'kafka_topics.orders'::regclass::oid")[0][0],)]
        finally:
            other.close()
    finally:
        conn.close()


def test_many_topics(broker_factory):
    """600 topics: a session opens (its set-up, creating the topics' tables, ran into the
    progress handler's deadline and failed with "interrupted" from about 400 on), and the
    catalog lists every topic, in well under the statement time limit."""
    broker = broker_factory(extra_args=S.SQL_ARGS)
    adm = H.admin_client(broker.bootstrap)
    from confluent_kafka.admin import NewTopic
    names = ["many%03d" % i for i in range(600)]
    for f in adm.create_topics([NewTopic(n, 1, 1) for n in names], request_timeout=60).values():
        f.result(60)
    conn = S.pg_connect(broker.pg)
    try:
        assert S.pg_rows(conn, "SELECT count(*) FROM system.topics") == [(600,)]
        got = S.pg_rows(conn, "SELECT c.relname FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n "
                              "ON n.oid = c.relnamespace WHERE n.nspname = 'kafka_topics' ORDER BY 1")
        assert [r[0] for r in got] == names
    finally:
        conn.close()
    assert lines(meta(broker.pg, r"\d many599"))[0].strip() == 'Table "kafka_topics.many599"'


def test_catalog_lists_only_what_the_user_may_see(secure_broker_factory, tmp_path):
    """With users and policies, the catalog describes the user's kafka_topics: the topics
    it may describe or read, as the topic tables are (docs/security.md), and current_user
    is the login."""
    import security_helpers as SEC
    b = secure_broker_factory(["127.0.0.1:0", "SASL_PLAINTEXT://127.0.0.1:0"],
                              extra_args=["--pg", "127.0.0.1:0"], start=False)
    t = SEC.Target.offline(b.data_dir, workdir=tmp_path / "policies", init=True)
    SEC.grant(t, "admin", [SEC.allow("*", "sluice:*")], password="admin-pw")
    SEC.grant(t, "alice", [SEC.allow(["KafkaRead"], ["sluice:topic:cat-open*"])], password="alice-pw")
    b.start()
    admin = SEC.Creds("SASL_PLAINTEXT", "SCRAM-SHA-256", "admin", "admin-pw")
    for topic in ("cat-open", "cat-secret"):
        SEC.create_topic(b.addr("SASL_PLAINTEXT"), admin, topic, 1)
    host, port = b.pg.rsplit(":", 1)
    listed = ("SELECT c.relname FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n "
              "ON n.oid = c.relnamespace WHERE n.nspname = 'kafka_topics' ORDER BY 1",
              "SELECT table_name FROM information_schema.tables WHERE table_schema = 'kafka_topics' ORDER BY 1")
    for user, password, want in (("alice", "alice-pw", ["cat-open"]), ("admin", "admin-pw", ["cat-open", "cat-secret"])):
        conn = S.psycopg2.connect(host=host, port=int(port), user=user, password=password, dbname="sluice",
                                  sslmode="disable", connect_timeout=10)
        conn.autocommit = True
        try:
            assert S.pg_rows(conn, "SELECT current_user") == [(user,)]
            for sql in listed:
                assert [r[0] for r in S.pg_rows(conn, sql)] == want, (user, sql)
        finally:
            conn.close()


def test_many_user_schemas_are_all_in_the_catalog(broker_factory):
    """8 user schemas (more than SQLite could attach beside the engine's) all work, and the
    catalog lists every one of them."""
    broker = broker_factory(extra_args=S.SQL_ARGS)
    for i in range(1, 9):
        S.psql_ok(broker.pg, "CREATE SCHEMA s%d" % i, "CREATE TABLE s%d.t(x INTEGER)" % i,
                  "INSERT INTO s%d.t VALUES (%d)" % (i, i))
    conn = S.pg_connect(broker.pg)
    try:
        assert S.pg_rows(conn, " UNION ALL ".join("SELECT x FROM s%d.t" % i for i in range(1, 9))) == \
            [(i,) for i in range(1, 9)]
        assert [r[0] for r in S.pg_rows(conn, "SELECT nspname FROM pg_catalog.pg_namespace "
                                              "WHERE nspname LIKE 's_' ORDER BY 1")] == \
            ["s%d" % i for i in range(1, 9)]
    finally:
        conn.close()


def test_expansion_target_in_the_catalog(b):
    """An expansion's target is a table of its schema like any other, with the columns
    the expansion gives it, to every tool."""
    import expansion_helpers as X
    X.create(b.http, "orders", "shop.order_rows",
             [{"name": "id", "type": "int64"}, {"name": "sku", "type": "string"}])
    conn = S.pg_connect(b.pg)
    try:
        cols = S.pg_rows(conn, "SELECT column_name, data_type FROM information_schema.columns "
                               "WHERE table_schema = 'shop' AND table_name = 'order_rows' ORDER BY ordinal_position")
        names = [c[0] for c in cols]
        assert ("id", "bigint") in cols and ("sku", "text") in cols, cols
        assert "_partition" in names and "_offset" in names, cols
        # The columns psql shows are the same, in the same order.
        described = lines(meta(b.pg, r"\d shop.order_rows"))
        assert described[0].strip() == 'Table "shop.order_rows"'
        assert [ln.split("|")[0].strip() for ln in described[3:3 + len(cols)]] == names
    finally:
        conn.close()
    # Without the engine's bookkeeping of expansions, which is in main
    # (docs/formats/expansion-duckdb.md).
    assert [ln.split("|")[1].strip() for ln in lines(meta(b.pg, r"\dt shop.*"))[3:-1]] == \
        ["items", "order_rows"], meta(b.pg, r"\dt shop.*")
