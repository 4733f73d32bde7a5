package rmqd.it;

import java.util.Map;

/**
 * One named scenario. It reads its flags, talks to the target and returns the result fields;
 * Main adds the common ones (scenario, client, ok, error, elapsedMs) and prints the JSON line.
 * Read every flag before the first network call: Main rejects unknown flags only after run returns.
 */
interface Scenario {
    void run(Flags f, Map<String, Object> out) throws Exception;
}
