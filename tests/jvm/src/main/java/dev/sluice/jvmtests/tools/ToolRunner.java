package dev.sluice.jvmtests.tools;

import java.io.BufferedReader;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.PrintStream;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import org.apache.kafka.common.utils.Exit;

/**
 * Runs Kafka's command-line tools (their main classes, as scripts/kafka-tool starts them)
 * one after another in one JVM, so that a suite calling a tool tens of times pays for one
 * JVM start instead of one per call (about 2 s each on a shared machine). Each run gets
 * the tool's own main(args), its own stdout and stderr, no stdin, and the exit code the
 * tool asks for through Kafka's Exit (every tool in 4.x exits that way), 0 when main
 * returns, 1 when it throws (as the JVM would).
 *
 * Requests on stdin, one a line: the main class and its arguments separated by NUL.
 * Answer on stdout: "EXIT CODE OUT_BYTES ERR_BYTES\n", then the tool's stdout and
 * stderr bytes. jvm_helpers.ToolRunner is the Python side.
 */
public final class ToolRunner {
    private ToolRunner() {}

    /** The exit code the running tool asked for (Exit.exit or Exit.halt), or null. */
    private static volatile Integer exitCode;

    /** A tool's stdout or stderr: what it writes until it asks to exit (a process that
     * exits writes nothing more; a tool catching the ToolExit below may try to). */
    private static final class Capture extends ByteArrayOutputStream {
        @Override
        public synchronized void write(int b) {
            if (exitCode == null) {
                super.write(b);
            }
        }

        @Override
        public synchronized void write(byte[] b, int off, int len) {
            if (exitCode == null) {
                super.write(b, off, len);
            }
        }
    }

    /** Thrown by the exit procedure to end the tool's main where it asked to exit. */
    private static final class ToolExit extends RuntimeException {
        private static final long serialVersionUID = 1L;
        final int code;

        ToolExit(int code) {
            super(null, null, false, false);
            this.code = code;
        }
    }

    public static void main(String[] argv) throws Exception {
        PrintStream answers = new PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.out), false);
        InputStream requests = System.in;
        System.setOut(new PrintStream(OUT, true, StandardCharsets.UTF_8));
        System.setErr(new PrintStream(ERR, true, StandardCharsets.UTF_8));
        Exit.Procedure exit = (code, message) -> {
            if (exitCode == null) {
                exitCode = code;
            }
            throw new ToolExit(code);
        };
        Exit.setExitProcedure(exit);
        Exit.setHaltProcedure(exit);
        BufferedReader in = new BufferedReader(new InputStreamReader(requests, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            String[] fields = line.split("\0", -1);
            ByteArrayOutputStream out = new Capture();
            ByteArrayOutputStream err = new Capture();
            exitCode = null;
            int code = run(fields[0], Arrays.copyOfRange(fields, 1, fields.length), out, err);
            answers.print("EXIT " + code + " " + out.size() + " " + err.size() + "\n");
            out.writeTo(answers);
            err.writeTo(answers);
            answers.flush();
        }
    }

    /** System.out or System.err for the whole JVM: writes go to the running tool's
     * capture. One stream throughout, as Scala's Console (ConfigCommand's println) keeps
     * the System.out it first saw. */
    private static final class Switch extends OutputStream {
        volatile OutputStream target = OutputStream.nullOutputStream();

        @Override
        public void write(int b) throws java.io.IOException {
            target.write(b);
        }

        @Override
        public void write(byte[] b, int off, int len) throws java.io.IOException {
            target.write(b, off, len);
        }
    }

    private static final Switch OUT = new Switch();
    private static final Switch ERR = new Switch();

    private static int run(String mainClass, String[] args, ByteArrayOutputStream out, ByteArrayOutputStream err) {
        OUT.target = out;
        ERR.target = err;
        System.setIn(new ByteArrayInputStream(new byte[0]));
        try {
            Method main = Class.forName(mainClass).getMethod("main", String[].class);
            main.invoke(null, (Object) args);
            return exitCode != null ? exitCode : 0;
        } catch (InvocationTargetException e) {
            if (exitCode != null) {
                return exitCode;
            }
            System.err.print("Exception in thread \"main\" ");
            e.getCause().printStackTrace(System.err);
            return 1;
        } catch (ReflectiveOperationException e) {
            e.printStackTrace(System.err);
            return 1;
        } finally {
            System.out.flush();
            System.err.flush();
            OUT.target = OutputStream.nullOutputStream();
            ERR.target = OutputStream.nullOutputStream();
        }
    }
}
