package meta

// Compacted reports a cleanup.policy=COMPACTION topic (CleanupPolicyUtils.isCompaction).
func Compacted(tc *TopicConfig) bool { return tc.Attributes["cleanup.policy"] == "COMPACTION" }
