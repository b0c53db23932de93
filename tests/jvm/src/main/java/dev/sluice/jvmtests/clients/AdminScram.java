package dev.sluice.jvmtests.clients;

import java.util.List;
import java.util.Properties;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ScramCredentialInfo;
import org.apache.kafka.clients.admin.ScramMechanism;
import org.apache.kafka.clients.admin.UserScramCredentialAlteration;
import org.apache.kafka.clients.admin.UserScramCredentialDeletion;
import org.apache.kafka.clients.admin.UserScramCredentialUpsertion;

/**
 * SCRAM credentials through AdminClient, each checked by a login with it:
 * AdminScram BOOTSTRAP SASL_BOOTSTRAP USER
 *
 * BOOTSTRAP is a PLAINTEXT listener of a permissive broker, SASL_BOOTSTRAP its
 * SASL_PLAINTEXT one. USER gets a SCRAM-SHA-256 password (8192 iterations) and a
 * SCRAM-SHA-512 one (4096), is described, logs in with each (and fails with a wrong
 * password), loses the SCRAM-SHA-256 credential, and is described and tried again.
 */
public final class AdminScram {
    static final String PW_256 = "java-256-secret";
    static final String PW_512 = "java-512-secret";

    private AdminScram() {}

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        String sasl = args[1];
        String user = args[2];
        try (Admin admin = Admin.create(Out.props(bootstrap, "sluice-java-admin-scram"))) {
            List<UserScramCredentialAlteration> set = List.of(
                    new UserScramCredentialUpsertion(user, new ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 8192), PW_256),
                    new UserScramCredentialUpsertion(user, new ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096), PW_512));
            var n = Out.line("alter");
            n.put("error", Out.errorOf(admin.alterUserScramCredentials(set).all()));
            n.put("error_few_iterations", Out.errorOf(admin.alterUserScramCredentials(List.of(
                    new UserScramCredentialUpsertion(user + "-few",
                            new ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 1000), "x"))).all()));
            Out.emit(n);
            describe(admin, "describe", user);
            describe(admin, "describe-unknown", user + "-nobody");
            login(sasl, "login", user);
            var d = Out.line("delete-256");
            d.put("error", Out.errorOf(admin.alterUserScramCredentials(List.of(
                    new UserScramCredentialDeletion(user, ScramMechanism.SCRAM_SHA_256))).all()));
            Out.emit(d);
            describe(admin, "describe-after-delete", user);
            login(sasl, "login-after-delete", user);
        }
    }

    static void describe(Admin admin, String kind, String user) throws Exception {
        var n = Out.line(kind);
        var f = admin.describeUserScramCredentials(List.of(user)).description(user);
        n.put("error", Out.errorOf(f));
        if (n.get("error").isNull()) {
            var creds = n.putArray("credentials");
            for (ScramCredentialInfo c : Out.get(f).credentialInfos()) {
                creds.addObject().put("mechanism", c.mechanism().mechanismName()).put("iterations", c.iterations());
            }
        }
        Out.emit(n);
    }

    static void login(String sasl, String kind, String user) throws Exception {
        var n = Out.line(kind);
        String[][] tries = {{"SCRAM-SHA-256", PW_256}, {"SCRAM-SHA-512", PW_512}, {"SCRAM-SHA-512", "wrong"}};
        for (String[] t : tries) {
            Properties p = Out.props(sasl, "sluice-java-scram-login");
            p.put("security.protocol", "SASL_PLAINTEXT");
            p.put("sasl.mechanism", t[0]);
            p.put("sasl.jaas.config", "org.apache.kafka.common.security.scram.ScramLoginModule required username=\""
                    + user + "\" password=\"" + t[1] + "\";");
            p.put("default.api.timeout.ms", "20000");
            p.put("request.timeout.ms", "10000");
            try (Admin a = Admin.create(p)) {
                n.put(t[0] + "/" + t[1], Out.errorOf(a.describeCluster().clusterId()));
            }
        }
        Out.emit(n);
    }
}
