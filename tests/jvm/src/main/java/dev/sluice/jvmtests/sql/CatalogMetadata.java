package dev.sluice.jvmtests.sql;

import java.sql.Connection;
import java.sql.DatabaseMetaData;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;

/**
 * What the PostgreSQL JDBC driver's DatabaseMetaData answers, printed one line per row as
 * tab-separated fields, for the tests to compare: CatalogMetadata JDBC_URL SCHEMA TABLE.
 * Sections: "schema", "table" (every table and view of every schema but pg_catalog and
 * information_schema), "column" (of SCHEMA.TABLE), "pk" (of SCHEMA.TABLE), "product".
 */
public final class CatalogMetadata {
    private CatalogMetadata() {}

    public static void main(String[] args) throws SQLException {
        String url = args[0];
        String schema = args[1];
        String table = args[2];
        try (Connection conn = DriverManager.getConnection(url)) {
            DatabaseMetaData md = conn.getMetaData();
            System.out.println("product\t" + md.getDatabaseProductName() + "\t"
                    + md.getDatabaseMajorVersion() + "." + md.getDatabaseMinorVersion());
            try (ResultSet rs = md.getSchemas()) {
                while (rs.next()) System.out.println("schema\t" + rs.getString("TABLE_SCHEM"));
            }
            try (ResultSet rs = md.getTables(null, null, "%", new String[] {"TABLE", "VIEW"})) {
                while (rs.next()) {
                    String s = rs.getString("TABLE_SCHEM");
                    if (s.equals("pg_catalog") || s.equals("information_schema")) continue;
                    System.out.println("table\t" + s + "\t" + rs.getString("TABLE_NAME") + "\t"
                            + rs.getString("TABLE_TYPE"));
                }
            }
            try (ResultSet rs = md.getColumns(null, schema, table, "%")) {
                while (rs.next()) {
                    System.out.println("column\t" + rs.getString("COLUMN_NAME") + "\t"
                            + rs.getInt("DATA_TYPE") + "\t" + rs.getString("TYPE_NAME") + "\t"
                            + rs.getInt("ORDINAL_POSITION") + "\t" + rs.getString("IS_NULLABLE"));
                }
            }
            try (ResultSet rs = md.getPrimaryKeys(null, schema, table)) {
                List<String> keys = new ArrayList<>();
                while (rs.next()) {
                    keys.add(rs.getString("COLUMN_NAME") + "\t" + rs.getInt("KEY_SEQ") + "\t"
                            + rs.getString("PK_NAME"));
                }
                for (String k : keys) System.out.println("pk\t" + k);
            }
        }
    }
}
