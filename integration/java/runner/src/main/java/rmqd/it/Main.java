package rmqd.it;

import java.io.FileOutputStream;
import java.io.FileDescriptor;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.TreeMap;
import org.apache.rocketmq.common.MQVersion;

/**
 * Scenario runner for the rmqd integration tests, built twice (rocketmq-client 5.3.3 and 4.9.7).
 *
 *   java -cp 'target/lib/client5/*' rmqd.it.Main <scenario> --flag value ...
 *
 * Prints exactly one JSON object on stdout (everything else the JVM or the client prints goes to stderr):
 *   {"scenario":..., "client":"V5_3_3", "ok":true|false, "error":"...", "elapsedMs":..., <scenario fields>}
 * Exit code 0 = ok, 1 = scenario failed (JSON still printed), 2 = usage error.
 * A watchdog ends the JVM if a scenario overruns --deadline ms (default 120000), so a caller never hangs.
 */
public final class Main {
    private static final Map<String, Scenario> SCENARIOS = new TreeMap<>();

    static {
        SCENARIOS.put("produce", new Produce());
        SCENARIOS.put("consume", new Consume());
        SCENARIOS.put("txproduce", new TxProduce());
    }

    private Main() {
    }

    public static void main(String[] args) {
        // Keep stdout for the result line only; clients and libraries may print to System.out.
        PrintStream result = new PrintStream(new FileOutputStream(FileDescriptor.out), true, StandardCharsets.UTF_8);
        System.setOut(System.err);
        long start = System.currentTimeMillis();
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("scenario", args.length > 0 ? args[0] : "");
        out.put("client", MQVersion.getVersionDesc(MQVersion.CURRENT_VERSION));
        out.put("ok", false);
        int code;
        try {
            if (args.length == 0 || !SCENARIOS.containsKey(args[0])) {
                throw new Flags.UsageException("usage: Main <scenario> [--flag value]...; scenarios: " + SCENARIOS.keySet());
            }
            Flags f = new Flags(args, 1);
            long deadline = f.longValue("deadline", 120000);
            startWatchdog(result, out, deadline);
            SCENARIOS.get(args[0]).run(f, out);
            out.put("ok", true);
            code = 0;
        } catch (Flags.UsageException e) {
            out.put("error", "usage: " + e.getMessage());
            code = 2;
        } catch (ScenarioFailure e) {
            out.put("error", e.getMessage());
            code = 1;
        } catch (Throwable e) {
            e.printStackTrace();
            out.put("error", describe(e));
            code = 1;
        }
        out.put("elapsedMs", System.currentTimeMillis() - start);
        synchronized (Main.class) {
            result.println(Json.write(out));
            result.flush();
        }
        // Client threads are not all daemons; do not wait for them.
        Runtime.getRuntime().halt(code);
    }

    private static void startWatchdog(PrintStream result, Map<String, Object> out, long deadline) {
        Thread t = new Thread(() -> {
            try {
                Thread.sleep(deadline);
            } catch (InterruptedException e) {
                return;
            }
            synchronized (Main.class) {
                Map<String, Object> o = new LinkedHashMap<>();
                o.put("scenario", out.get("scenario"));
                o.put("client", out.get("client"));
                o.put("ok", false);
                o.put("error", "watchdog: scenario still running after --deadline " + deadline + " ms");
                result.println(Json.write(o));
                result.flush();
                Runtime.getRuntime().halt(3);
            }
        }, "rmqd-it-watchdog");
        t.setDaemon(true);
        t.start();
    }

    static String describe(Throwable e) {
        StringBuilder sb = new StringBuilder();
        for (Throwable c = e; c != null && sb.length() < 600; c = c.getCause()) {
            if (sb.length() > 0) {
                sb.append(" <- ");
            }
            sb.append(c.getClass().getSimpleName()).append(": ").append(c.getMessage());
            if (c.getCause() == c) {
                break;
            }
        }
        return sb.toString();
    }
}
