package dev.sluice.jvmtests.clients;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.nio.charset.StandardCharsets;
import java.util.Collection;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.Headers;

/** JSON lines on stdout, one per fact, for the pytest side to assert on. */
final class Out {
    static final ObjectMapper JSON = new ObjectMapper();
    /** Every wait of these programs is bounded; the pytest side bounds the process too. */
    static final long WAIT_SECONDS = 60;

    private Out() {}

    static ObjectNode line(String kind) {
        ObjectNode n = JSON.createObjectNode();
        n.put("kind", kind);
        return n;
    }

    static synchronized void emit(ObjectNode n) {
        System.out.println(n.toString());
        System.out.flush();
    }

    static String text(byte[] b) {
        return b == null ? null : new String(b, StandardCharsets.UTF_8);
    }

    static byte[] bytes(String s) {
        return s == null ? null : s.getBytes(StandardCharsets.UTF_8);
    }

    /** Headers as [[key, value-or-null], ...], in order, duplicates kept. */
    static void putHeaders(ObjectNode n, Headers headers) {
        var arr = n.putArray("headers");
        for (Header h : headers) {
            var pair = arr.addArray();
            pair.add(h.key());
            pair.add(text(h.value()));
        }
    }

    static <T> T get(KafkaFuture<T> f) throws InterruptedException, ExecutionException {
        try {
            return f.get(WAIT_SECONDS, TimeUnit.SECONDS);
        } catch (java.util.concurrent.TimeoutException e) {
            throw new ExecutionException("no answer within " + WAIT_SECONDS + " s", e);
        }
    }

    static <T> T get(Future<T> f) throws InterruptedException, ExecutionException {
        try {
            return f.get(WAIT_SECONDS, TimeUnit.SECONDS);
        } catch (java.util.concurrent.TimeoutException e) {
            throw new ExecutionException("no answer within " + WAIT_SECONDS + " s", e);
        }
    }

    /** The simple class name of the failure's cause (what a Kafka user catches), or null. */
    static String errorOf(KafkaFuture<?> f) throws InterruptedException {
        try {
            get(f);
            return null;
        } catch (ExecutionException e) {
            Throwable c = e.getCause() == null ? e : e.getCause();
            return c.getClass().getSimpleName();
        }
    }

    static Properties props(String bootstrap, String clientId) {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("client.id", clientId);
        return p;
    }

    /** KEY=VALUE arguments added to (or overriding) a client's properties. */
    static void putAll(Properties p, Collection<String> kvs) {
        for (String kv : kvs) {
            int eq = kv.indexOf('=');
            if (eq <= 0) {
                throw new IllegalArgumentException("not KEY=VALUE: " + kv);
            }
            p.put(kv.substring(0, eq), kv.substring(eq + 1));
        }
    }
}
