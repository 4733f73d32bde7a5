// Oracle: evaluates RocketMQ SQL92 selectors with the Java filter for
// processor/filter's differential tests (see oracle_test.go). Input lines are
// hex(expression) TAB hex(properties)...; output is PARSE or one letter per
// properties string: T, F, N (null), X (exception), O (other).
import java.io.*;
import java.nio.charset.StandardCharsets;
import java.util.*;
import org.apache.rocketmq.filter.FilterFactory;
import org.apache.rocketmq.filter.expression.*;
import org.apache.rocketmq.common.message.MessageDecoder;

public class Oracle {
    static String unhex(String h) {
        byte[] b = new byte[h.length() / 2];
        for (int i = 0; i < b.length; i++) b[i] = (byte) Integer.parseInt(h.substring(2 * i, 2 * i + 2), 16);
        return new String(b, StandardCharsets.UTF_8);
    }
    public static void main(String[] a) throws Exception {
        BufferedReader r = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        PrintStream out = new PrintStream(new BufferedOutputStream(System.out), false, "UTF-8");
        String line;
        while ((line = r.readLine()) != null) {
            String[] f = line.split("\t", -1);
            String expr = unhex(f[0]);
            Expression e;
            try {
                e = FilterFactory.INSTANCE.get("SQL92").compile(expr);
            } catch (Throwable t) {
                out.println("PARSE");
                continue;
            }
            StringBuilder sb = new StringBuilder();
            for (int i = 1; i < f.length; i++) {
                String props = unhex(f[i]);
                final Map<String, String> m = props.isEmpty() ? null : MessageDecoder.string2messageProperties(props);
                EvaluationContext ctx = new EvaluationContext() {
                    public Object get(String n) { return m == null ? null : m.get(n); }
                    public Map<String, Object> keyValues() { return null; }
                };
                String res;
                try {
                    Object v = e.evaluate(ctx);
                    res = v == null ? "N" : v == Boolean.TRUE ? "T" : v == Boolean.FALSE ? "F" : "O";
                } catch (Throwable t) {
                    res = "X";
                }
                sb.append(res);
            }
            out.println(sb);
        }
        out.flush();
    }
}
