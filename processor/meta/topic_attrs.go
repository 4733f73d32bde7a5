package meta

import "sort"

// UnhonouredAttribute says why rmqd cannot do what Java does for a topic
// attribute value ("" when it can or the attribute changes nothing in Java's
// default store). Java compacts a cleanup.policy=COMPACTION topic; rmqd has no
// compaction store. (queue.type=BatchCQ is honoured: store/batchcq.go.)
func UnhonouredAttribute(key, value string) string {
	switch {
	case key == "cleanup.policy" && value == "COMPACTION":
		return "rmqd has no compaction store"
	}
	return ""
}

// warnUnhonoured logs each loaded topic whose attributes ask for what rmqd
// cannot do (a topics.json written by a Java broker): it is served as a
// DELETE topic.
func (m *TopicConfigManager) warnUnhonoured(tcs map[string]TopicConfig) {
	names := make([]string, 0, len(tcs))
	for name := range tcs {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		attrs := tcs[name].Attributes
		keys := make([]string, 0, len(attrs))
		for k := range attrs {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if why := UnhonouredAttribute(k, attrs[k]); why != "" {
				m.log.Warn("topic attribute not honoured: served as DELETE", "topic", name,
					"attribute", k+"="+attrs[k], "reason", why)
			}
		}
	}
}
