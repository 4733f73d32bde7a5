package rmqd.it;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import org.apache.rocketmq.common.message.Message;

/**
 * The message-shaping flags every producing scenario shares: --topic, [--count 1], [--size 64],
 * [--tags a,b (cycled)], [--keys prefix (key of message i = prefix-i)], [--props k=v,k2=v2], [--props-sep ,],
 * [--body-prefix rmqd-it], [--delay-level 0].
 */
final class MessageSpec {
    final String topic;
    final int count;
    private final int size;
    private final List<String> tags;
    private final String keyPrefix;
    private final Map<String, String> props;
    private final String bodyPrefix;
    private final int delayLevel;

    MessageSpec(Flags f) {
        topic = f.required("topic");
        count = f.integer("count", 1);
        size = f.integer("size", 64);
        String t = f.str("tags", "");
        tags = t.isEmpty() ? new ArrayList<>() : Arrays.asList(t.split(","));
        keyPrefix = f.str("keys", "");
        props = f.map("props", f.str("props-sep", ","));
        bodyPrefix = f.str("body-prefix", "rmqd-it");
        delayLevel = f.integer("delay-level", 0);
    }

    /** Message i: body Bodies.make(bodyPrefix, i, size), tag i mod n, key prefix-i, every property. */
    Message build(int i) {
        Message m = new Message(topic, Bodies.make(bodyPrefix, i, size));
        if (!tags.isEmpty()) {
            m.setTags(tags.get(i % tags.size()));
        }
        if (!keyPrefix.isEmpty()) {
            m.setKeys(keyPrefix + "-" + i);
        }
        for (Map.Entry<String, String> e : props.entrySet()) {
            m.putUserProperty(e.getKey(), e.getValue());
        }
        if (delayLevel > 0) {
            m.setDelayTimeLevel(delayLevel);
        }
        return m;
    }

    List<Message> buildAll() {
        List<Message> msgs = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
            msgs.add(build(i));
        }
        return msgs;
    }
}
