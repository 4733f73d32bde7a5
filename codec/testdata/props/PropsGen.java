import java.io.BufferedReader;
import java.io.FileReader;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.TreeMap;

import org.apache.rocketmq.common.message.MessageDecoder;

// Writes what Apache RocketMQ's MessageDecoder makes of each case in cases.txt
// (one hex-encoded properties string a line): the decoded map and the map
// encoded again (HashMap order). See README.md.
public class PropsGen {
    static String hex(String s) {
        StringBuilder sb = new StringBuilder();
        for (byte b : s.getBytes(StandardCharsets.UTF_8)) {
            sb.append(String.format("%02x", b & 0xff));
        }
        return sb.toString();
    }

    static String unhex(String h) {
        byte[] out = new byte[h.length() / 2];
        for (int i = 0; i < out.length; i++) {
            out[i] = (byte) Integer.parseInt(h.substring(2 * i, 2 * i + 2), 16);
        }
        return new String(out, StandardCharsets.UTF_8);
    }

    public static void main(String[] args) throws Exception {
        try (BufferedReader in = new BufferedReader(new FileReader(args[0]));
             PrintWriter out = new PrintWriter(args[1], "UTF-8")) {
            String line;
            while ((line = in.readLine()) != null) {
                if (line.isEmpty() || line.startsWith("#")) {
                    continue;
                }
                String props = unhex(line.trim());
                Map<String, String> m = MessageDecoder.string2messageProperties(props);
                StringBuilder sb = new StringBuilder();
                for (Map.Entry<String, String> e : new TreeMap<>(m).entrySet()) {
                    if (sb.length() > 0) {
                        sb.append(',');
                    }
                    sb.append(hex(e.getKey())).append('=').append(hex(e.getValue()));
                }
                out.println(line.trim() + "\t" + hex(MessageDecoder.messageProperties2String(m)) + "\t" + sb);
            }
        }
    }
}
