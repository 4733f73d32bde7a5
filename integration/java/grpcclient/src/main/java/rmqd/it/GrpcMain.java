package rmqd.it;

import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Scenario program for the RocketMQ 5.x gRPC client (rocketmq-client-java), which talks to rocketmq-proxy.
 * Same contract as the remoting runner's Main: exactly one JSON line on stdout, exit 0 ok, 1 failed,
 * 2 usage, 3 watchdog (--deadline ms).
 *
 *   java -cp 'target/lib/grpcclient/*' rmqd.it.GrpcMain roundtrip --endpoints 127.0.0.1:8081 --topic T ...
 */
public final class GrpcMain {
    private GrpcMain() {
    }

    public static void main(String[] args) {
        String name = args.length > 0 ? args[0] : "";
        execute(name, args, 1, name.equals("roundtrip") ? new GrpcRoundtrip() : null);
    }

    /** Runs one scenario (null: a usage error) with the flags from args[from], under the output contract. */
    static void execute(String scenarioName, String[] args, int from, Scenario scenario) {
        PrintStream result = new PrintStream(new FileOutputStream(FileDescriptor.out), true, StandardCharsets.UTF_8);
        System.setOut(System.err);
        long start = System.currentTimeMillis();
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("scenario", scenarioName);
        out.put("client", "rocketmq-client-java");
        out.put("ok", false);
        int code;
        try {
            if (scenario == null) {
                throw new Flags.UsageException("usage: GrpcMain roundtrip [--flag value]...");
            }
            Flags f = new Flags(args, from);
            long deadline = f.longValue("deadline", 120000);
            startWatchdog(result, out, deadline);
            scenario.run(f, out);
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
        synchronized (GrpcMain.class) {
            result.println(Json.write(out));
            result.flush();
        }
        Runtime.getRuntime().halt(code);
    }

    private static void startWatchdog(PrintStream result, Map<String, Object> out, long deadline) {
        Thread t = new Thread(() -> {
            try {
                Thread.sleep(deadline);
            } catch (InterruptedException e) {
                return;
            }
            synchronized (GrpcMain.class) {
                Map<String, Object> o = new LinkedHashMap<>();
                try {
                    o.putAll(out); // partial results help; they may be mid-update, so only try
                } catch (RuntimeException e) {
                    o.put("scenario", out.get("scenario"));
                }
                o.put("ok", false);
                String why = "watchdog: scenario still running after --deadline " + deadline + " ms";
                o.put("error", why);
                String line;
                try {
                    line = Json.write(o);
                } catch (RuntimeException e) {
                    line = "{\"scenario\":\"roundtrip\",\"ok\":false,\"error\":\"" + why + "\"}";
                }
                result.println(line);
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
