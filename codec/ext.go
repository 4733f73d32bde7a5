package codec

import (
	"strconv"
	"strings"
)

// Typed access to ExtFields with Java's parse semantics
// (RemotingCommand.decodeCommandCustomHeaderDirectly): Integer.parseInt,
// Long.parseLong, Boolean.parseBoolean. None of them allocates unless it fails.

// GetInt32 returns key parsed as a Java int. ok is false when the key is absent;
// err is a *FieldError when it is present but not a valid int.
func (e ExtFields) GetInt32(key string) (v int32, ok bool, err error) {
	s, ok := e.Get(key)
	if !ok {
		return 0, false, nil
	}
	v, err = parseInt32Field(key, s)
	return v, true, err
}

// GetInt64 returns key parsed as a Java long; see GetInt32.
func (e ExtFields) GetInt64(key string) (v int64, ok bool, err error) {
	s, ok := e.Get(key)
	if !ok {
		return 0, false, nil
	}
	v, err = parseInt64Field(key, s)
	return v, true, err
}

// GetBool returns key with Boolean.parseBoolean semantics: true only for "true"
// in any case, false for anything else. ok is false when the key is absent.
func (e ExtFields) GetBool(key string) (v bool, ok bool) {
	s, ok := e.Get(key)
	if !ok {
		return false, false
	}
	return parseJavaBool(s), true
}

// Require returns the value of a required field, or a *MissingFieldError.
func (e ExtFields) Require(key string) (string, error) {
	s, ok := e.Get(key)
	if !ok {
		return "", &MissingFieldError{Field: key}
	}
	return s, nil
}

// RequireInt32 returns a required int field: *MissingFieldError when absent,
// *FieldError when it does not parse.
func (e ExtFields) RequireInt32(key string) (int32, error) {
	v, ok, err := e.GetInt32(key)
	if !ok {
		return 0, &MissingFieldError{Field: key}
	}
	return v, err
}

// RequireInt64 returns a required long field; see RequireInt32.
func (e ExtFields) RequireInt64(key string) (int64, error) {
	v, ok, err := e.GetInt64(key)
	if !ok {
		return 0, &MissingFieldError{Field: key}
	}
	return v, err
}

// SetInt32 sets key to the decimal form of v. It allocates the string; hot paths
// write typed headers through RemotingCommand.CustomHeader instead.
func (e *ExtFields) SetInt32(key string, v int32) { e.Set(key, strconv.FormatInt(int64(v), 10)) }

// SetInt64 sets key to the decimal form of v; see SetInt32.
func (e *ExtFields) SetInt64(key string, v int64) { e.Set(key, strconv.FormatInt(v, 10)) }

// SetBool sets key to "true" or "false" (no allocation).
func (e *ExtFields) SetBool(key string, v bool) {
	if v {
		e.Set(key, "true")
	} else {
		e.Set(key, "false")
	}
}

// Del removes key, keeping the order of the others.
func (e *ExtFields) Del(key string) {
	s := *e
	for i := range s {
		if s[i].Key == key {
			copy(s[i:], s[i+1:])
			s[len(s)-1] = ExtField{}
			*e = s[:len(s)-1]
			return
		}
	}
}

// Reset empties e and keeps its capacity, dropping references to old strings.
func (e *ExtFields) Reset() {
	clear(*e)
	*e = (*e)[:0]
}

func parseInt32Field(key, s string) (int32, error) {
	v, ok := parseJavaLong(s)
	if !ok || v < -1<<31 || v > 1<<31-1 {
		return 0, &FieldError{Field: key, Value: s, Type: "int32"}
	}
	return int32(v), nil
}

func parseInt64Field(key, s string) (int64, error) {
	v, ok := parseJavaLong(s)
	if !ok {
		return 0, &FieldError{Field: key, Value: s, Type: "int64"}
	}
	return v, nil
}

// parseJavaLong is Long.parseLong(s, 10) for ASCII digits: an optional '+' or
// '-', then at least one digit, nothing else, no overflow. (Java also accepts
// non-ASCII Unicode digits; no client sends those.)
func parseJavaLong(s string) (int64, bool) {
	if s == "" {
		return 0, false
	}
	neg := false
	i := 0
	switch s[0] {
	case '-':
		neg = true
		i = 1
	case '+':
		i = 1
	}
	if i == len(s) || len(s)-i > 19 {
		return 0, false
	}
	var u uint64
	for ; i < len(s); i++ {
		c := s[i] - '0'
		if c > 9 {
			return 0, false
		}
		u = u*10 + uint64(c) // at most 19 digits: no uint64 overflow
	}
	if neg {
		if u > 1<<63 {
			return 0, false
		}
		return -int64(u), true
	}
	if u > 1<<63-1 {
		return 0, false
	}
	return int64(u), true
}

// parseJavaBool is Boolean.parseBoolean.
func parseJavaBool(s string) bool { return len(s) == 4 && strings.EqualFold(s, "true") }
