package dev.sluice.jvmtests.acls;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.DeleteAclsResult;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.acl.AccessControlEntry;
import org.apache.kafka.common.acl.AccessControlEntryFilter;
import org.apache.kafka.common.acl.AclBinding;
import org.apache.kafka.common.acl.AclBindingFilter;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.acl.AclPermissionType;
import org.apache.kafka.common.resource.PatternType;
import org.apache.kafka.common.resource.ResourcePattern;
import org.apache.kafka.common.resource.ResourcePatternFilter;
import org.apache.kafka.common.resource.ResourceType;

/**
 * The Java AdminClient's createAcls, describeAcls and deleteAcls:
 * AdminAcls SASL_BOOTSTRAP ADMIN_USER ADMIN_PASSWORD PRINCIPAL TOPIC
 *
 * Over SASL_PLAINTEXT with PLAIN. Creates three bindings for PRINCIPAL (Read on TOPIC,
 * Write on the prefix TOPIC-, one with host 10.0.0.1 that policies cannot express),
 * describes PRINCIPAL's bindings, deletes those on TOPIC, and describes again. One line
 * per fact on stdout: "create BINDING ok|ERROR_CLASS: MESSAGE", "describe BINDING",
 * "delete BINDING ok|...", "describe-after BINDING", where BINDING is
 * "TYPE PATTERN NAME PRINCIPAL HOST OPERATION PERMISSION".
 */
public final class AdminAcls {
    static final long WAIT_SECONDS = 60;

    private AdminAcls() {}

    public static void main(String[] args) throws Exception {
        Properties p = new Properties();
        p.put("bootstrap.servers", args[0]);
        p.put("client.id", "sluice-java-admin-acls");
        p.put("security.protocol", "SASL_PLAINTEXT");
        p.put("sasl.mechanism", "PLAIN");
        p.put("sasl.jaas.config", "org.apache.kafka.common.security.plain.PlainLoginModule required username=\""
                + args[1] + "\" password=\"" + args[2] + "\";");
        p.put("default.api.timeout.ms", "30000");
        String principal = args[3];
        String topic = args[4];
        try (Admin admin = Admin.create(p)) {
            List<AclBinding> bindings = List.of(
                    binding(ResourceType.TOPIC, topic, PatternType.LITERAL, principal, "*", AclOperation.READ),
                    binding(ResourceType.TOPIC, topic + "-", PatternType.PREFIXED, principal, "*", AclOperation.WRITE),
                    binding(ResourceType.TOPIC, topic, PatternType.LITERAL, principal, "10.0.0.1", AclOperation.READ));
            for (Map.Entry<AclBinding, KafkaFuture<Void>> e : admin.createAcls(bindings).values().entrySet()) {
                System.out.println("create " + text(e.getKey()) + " " + outcome(e.getValue()));
            }
            AclBindingFilter mine = new AclBindingFilter(ResourcePatternFilter.ANY,
                    new AccessControlEntryFilter(principal, null, AclOperation.ANY, AclPermissionType.ANY));
            describe(admin, "describe", mine);
            AclBindingFilter onTopic = new AclBindingFilter(
                    new ResourcePatternFilter(ResourceType.TOPIC, topic, PatternType.LITERAL), AccessControlEntryFilter.ANY);
            DeleteAclsResult deleted = admin.deleteAcls(List.of(onTopic));
            DeleteAclsResult.FilterResults results = deleted.values().get(onTopic).get(WAIT_SECONDS, TimeUnit.SECONDS);
            for (DeleteAclsResult.FilterResult r : results.values()) {
                String what = r.exception() == null ? "ok" : error(r.exception());
                System.out.println("delete " + text(r.binding()) + " " + what);
            }
            describe(admin, "describe-after", mine);
        }
        System.out.flush();
    }

    static AclBinding binding(ResourceType type, String name, PatternType pattern, String principal, String host,
                              AclOperation op) {
        return new AclBinding(new ResourcePattern(type, name, pattern),
                new AccessControlEntry(principal, host, op, AclPermissionType.ALLOW));
    }

    static void describe(Admin admin, String kind, AclBindingFilter filter) throws Exception {
        List<String> lines = new ArrayList<>();
        for (AclBinding b : admin.describeAcls(filter).values().get(WAIT_SECONDS, TimeUnit.SECONDS)) {
            lines.add(kind + " " + text(b));
        }
        lines.sort(null);
        lines.forEach(System.out::println);
    }

    static String text(AclBinding b) {
        if (b == null) return "null";
        ResourcePattern r = b.pattern();
        AccessControlEntry e = b.entry();
        return r.resourceType() + " " + r.patternType() + " " + r.name() + " " + e.principal() + " " + e.host() + " "
                + e.operation() + " " + e.permissionType();
    }

    static String outcome(KafkaFuture<Void> f) throws InterruptedException {
        try {
            f.get(WAIT_SECONDS, TimeUnit.SECONDS);
            return "ok";
        } catch (ExecutionException e) {
            return error(e.getCause());
        } catch (java.util.concurrent.TimeoutException e) {
            return "timeout";
        }
    }

    static String error(Throwable t) {
        return t.getClass().getSimpleName() + ": " + t.getMessage();
    }
}
