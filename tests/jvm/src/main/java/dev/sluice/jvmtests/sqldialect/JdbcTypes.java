package dev.sluice.jvmtests.sqldialect;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.ResultSetMetaData;
import java.sql.Statement;
import java.sql.Timestamp;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.util.Base64;

/**
 * The PostgreSQL JDBC driver against Sluice's pg listener, in its non-autocommit mode:
 * a user schema and a table of every type made and filled inside a transaction with a
 * prepared statement's typed parameters, then read back through a prepared statement
 * run more times than the driver's prepareThreshold (so that it switches to a named
 * server statement and binary results), and a topic read with parameters.
 *
 * <p>Usage: JdbcTypes JDBC_URL TOPIC_TABLE. One JSON line per fact on stdout.
 */
public final class JdbcTypes {
    private static final ObjectMapper JSON = new ObjectMapper();

    private JdbcTypes() {}

    private static void emit(ObjectNode n) {
        System.out.println(n.toString());
        System.out.flush();
    }

    public static void main(String[] args) throws Exception {
        String url = args[0];
        String topicTable = args[1];
        try (Connection c = DriverManager.getConnection(url)) {
            c.setAutoCommit(false);
            try (Statement s = c.createStatement()) {
                s.execute("CREATE SCHEMA jdbc_s");
                s.execute("CREATE TABLE jdbc_s.all_types (i BIGINT, f DOUBLE PRECISION, t TEXT, "
                        + "b BLOB, ok BOOLEAN, \"at\" TIMESTAMPTZ, doc JSON)");
            }
            try (PreparedStatement ins = c.prepareStatement(
                    "INSERT INTO jdbc_s.all_types VALUES (?, ?, ?, ?, ?, ?, ?)")) {
                for (int n = 0; n < 3; ++n) {
                    ins.setLong(1, 9_000_000_000L + n);
                    ins.setDouble(2, 1.5 * n);
                    ins.setString(3, "text-" + n + "-ż");
                    ins.setBytes(4, new byte[] {0, (byte) 0xff, (byte) n});
                    ins.setBoolean(5, n % 2 == 0);
                    ins.setTimestamp(6, Timestamp.from(Instant.parse("2024-05-01T10:00:00.250Z").plusSeconds(n)));
                    ins.setString(7, "{\"n\":" + n + "}");
                    ins.executeUpdate();
                }
            }
            c.commit();
            ObjectNode committed = JSON.createObjectNode();
            committed.put("kind", "committed");
            emit(committed);

            // More runs than prepareThreshold (5): the last ones use a server-side
            // statement and binary transfer of int8, float8, bool, bytea, timestamptz.
            try (PreparedStatement q = c.prepareStatement(
                    "SELECT i, f, t, b, ok, \"at\", doc FROM jdbc_s.all_types WHERE i >= ? AND t LIKE ? ORDER BY i")) {
                for (int run = 0; run < 7; ++run) {
                    q.setLong(1, 9_000_000_001L);
                    q.setString(2, "text-%");
                    try (ResultSet rs = q.executeQuery()) {
                        ResultSetMetaData md = rs.getMetaData();
                        ObjectNode out = JSON.createObjectNode();
                        out.put("kind", "all_types");
                        out.put("run", run);
                        ArrayNode types = out.putArray("types");
                        for (int i = 1; i <= md.getColumnCount(); ++i) types.add(md.getColumnTypeName(i));
                        ArrayNode rows = out.putArray("rows");
                        while (rs.next()) {
                            ObjectNode r = rows.addObject();
                            r.put("i", rs.getLong(1));
                            r.put("f", rs.getDouble(2));
                            r.put("t", rs.getString(3));
                            r.put("b", Base64.getEncoder().encodeToString(rs.getBytes(4)));
                            r.put("ok", rs.getBoolean(5));
                            r.put("at", rs.getObject(6, OffsetDateTime.class).toInstant().toString());
                            r.put("doc", rs.getString(7));
                        }
                        emit(out);
                    }
                }
            }
            c.commit();

            // Typed binds: an OffsetDateTime (timestamptz, with its offset), a BigDecimal
            // (numeric), a short and an int, a date.
            try (PreparedStatement q = c.prepareStatement("SELECT count(*), min(i) FROM jdbc_s.all_types "
                    + "WHERE \"at\" >= ? AND f < ? AND i > ? AND i < ? + 9000000000 AND \"at\"::date = ?")) {
                for (int run = 0; run < 7; ++run) {
                    q.setObject(1, OffsetDateTime.parse("2024-05-01T12:00:01.250+02:00"));
                    q.setBigDecimal(2, new java.math.BigDecimal("2.75"));
                    q.setShort(3, (short) 7);
                    q.setInt(4, 100);
                    q.setDate(5, java.sql.Date.valueOf("2024-05-01"));
                    try (ResultSet rs = q.executeQuery()) {
                        rs.next();
                        ObjectNode out = JSON.createObjectNode();
                        out.put("kind", "typed_binds");
                        out.put("run", run);
                        out.put("count", rs.getLong(1));
                        out.put("min", rs.getLong(2));
                        emit(out);
                    }
                }
            }
            c.commit();

            // A topic read with parameters, keys as text, the timestamps as timestamptz.
            try (PreparedStatement q = c.prepareStatement("SELECT partition, \"offset\", key::text, "
                    + "timestamp_producer, timestamp_producer_tz FROM " + topicTable
                    + " WHERE partition = ? AND \"offset\" < ? ORDER BY \"offset\"")) {
                for (int run = 0; run < 7; ++run) {
                    q.setInt(1, 1);
                    q.setLong(2, 3);
                    try (ResultSet rs = q.executeQuery()) {
                        ObjectNode out = JSON.createObjectNode();
                        out.put("kind", "topic");
                        out.put("run", run);
                        ArrayNode rows = out.putArray("rows");
                        while (rs.next()) {
                            ObjectNode r = rows.addObject();
                            r.put("partition", rs.getInt(1));
                            r.put("offset", rs.getLong(2));
                            r.put("key", rs.getString(3));
                            r.put("ms", rs.getLong(4));
                            r.put("tz", rs.getTimestamp(5).toInstant().toEpochMilli());
                        }
                        emit(out);
                    }
                }
            }
            c.rollback();
            try (Statement s = c.createStatement()) {
                s.execute("DROP SCHEMA jdbc_s CASCADE");
            }
            c.commit();
        }
        // autosave=always: the driver wraps each statement in SAVEPOINT PGJDBC_AUTOSAVE and
        // rolls back to it after an error, so the transaction goes on; a named savepoint.
        // An engine without savepoints (DuckDB) refuses the first one: its SQLSTATE and
        // message are reported, then the same connection after ROLLBACK, in autocommit
        // (where the driver sends no savepoint).
        try (Connection c = DriverManager.getConnection(url + "&autosave=always")) {
            c.setAutoCommit(false);
            try (Statement s = c.createStatement()) {
                try {
                    s.execute("CREATE TABLE jdbc_autosave (a INTEGER PRIMARY KEY)");
                } catch (java.sql.SQLException e) {
                    ObjectNode out = JSON.createObjectNode();
                    out.put("kind", "autosave");
                    out.put("refused", e.getSQLState());
                    out.put("message", e.getMessage());
                    c.rollback();
                    c.setAutoCommit(true);
                    s.execute("CREATE TABLE jdbc_autosave (a INTEGER PRIMARY KEY)");
                    s.execute("INSERT INTO jdbc_autosave VALUES (1)");
                    try {
                        s.execute("INSERT INTO jdbc_autosave VALUES (1)");
                    } catch (java.sql.SQLException dup) {
                        out.put("error", dup.getSQLState());
                    }
                    s.execute("INSERT INTO jdbc_autosave VALUES (2)");
                    try (ResultSet rs = s.executeQuery("SELECT a FROM jdbc_autosave ORDER BY a")) {
                        ArrayNode rows = out.putArray("rows");
                        while (rs.next()) rows.add(rs.getInt(1));
                    }
                    s.execute("DROP TABLE jdbc_autosave");
                    emit(out);
                    System.out.println("{\"kind\":\"done\"}");
                    return;
                }
                s.execute("INSERT INTO jdbc_autosave VALUES (1)");
                ObjectNode out = JSON.createObjectNode();
                out.put("kind", "autosave");
                try {
                    s.execute("INSERT INTO jdbc_autosave VALUES (1)");
                } catch (java.sql.SQLException e) {
                    out.put("error", e.getSQLState());
                }
                s.execute("INSERT INTO jdbc_autosave VALUES (2)");
                java.sql.Savepoint sp = c.setSavepoint("mine");
                s.execute("INSERT INTO jdbc_autosave VALUES (3)");
                c.rollback(sp);
                c.commit();
                try (ResultSet rs = s.executeQuery("SELECT a FROM jdbc_autosave ORDER BY a")) {
                    ArrayNode rows = out.putArray("rows");
                    while (rs.next()) rows.add(rs.getInt(1));
                }
                s.execute("DROP TABLE jdbc_autosave");
                c.commit();
                emit(out);
            }
        }
        System.out.println("{\"kind\":\"done\"}");
    }
}
