package processor

import "strconv"

// i32s and i64s format Java ints and longs for ext fields and stats tables.
func i32s(v int32) string { return strconv.FormatInt(int64(v), 10) }
func i64s(v int64) string { return strconv.FormatInt(v, 10) }
