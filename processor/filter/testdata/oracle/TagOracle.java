// TagOracle: parses tag subscriptions with FilterAPI.buildSubscriptionData for
// processor/filter's differential test (see oracle_test.go). Input lines are
// hex(subString); output is ERR or ALL/SOME, the sorted tags in hex, "|", the
// sorted codes.
import java.io.*;
import java.nio.charset.StandardCharsets;
import java.util.*;
import org.apache.rocketmq.remoting.protocol.filter.FilterAPI;
import org.apache.rocketmq.remoting.protocol.heartbeat.SubscriptionData;

public class TagOracle {
    public static void main(String[] a) throws Exception {
        BufferedReader r = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        PrintStream out = new PrintStream(new BufferedOutputStream(System.out), false, "UTF-8");
        String line;
        while ((line = r.readLine()) != null) {
            byte[] b = new byte[line.length() / 2];
            for (int i = 0; i < b.length; i++) b[i] = (byte) Integer.parseInt(line.substring(2 * i, 2 * i + 2), 16);
            String s = new String(b, StandardCharsets.UTF_8);
            try {
                SubscriptionData d = FilterAPI.buildSubscriptionData("t", s);
                List<String> tags = new ArrayList<>(d.getTagsSet());
                Collections.sort(tags);
                List<Integer> codes = new ArrayList<>(d.getCodeSet());
                Collections.sort(codes);
                StringBuilder sb = new StringBuilder();
                sb.append(d.getSubString().equals("*") ? "ALL" : "SOME");
                for (String t : tags) { sb.append(' '); for (byte x : t.getBytes(StandardCharsets.UTF_8)) sb.append(String.format("%02x", x)); }
                sb.append(" |");
                for (Integer c : codes) sb.append(' ').append(c);
                out.println(sb);
            } catch (Throwable t) {
                out.println("ERR");
            }
        }
        out.flush();
    }
}
