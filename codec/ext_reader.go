package codec

// ExtReader reads request header fields one by one with the rules of the typed
// headers: ExtFields' getters, Java's @CFNotNull for the required ones. The
// send and pull decoders use it; every other request header is a struct read
// by DecodeHeader, which the tests cross-check against it. It keeps the
// first error, so a handler reads every field and checks Err once.
type ExtReader struct {
	Ext ExtFields
	err error
}

// Err is the first missing or malformed field met, or nil.
func (h *ExtReader) Err() error { return h.err }

func (h *ExtReader) keep(err error) {
	if h.err == nil {
		h.err = err
	}
}

// Str returns an optional string field.
func (h *ExtReader) Str(key string) string {
	v, _ := h.Ext.Get(key)
	return v
}

// ReqStr returns a required string field.
func (h *ExtReader) ReqStr(key string) string {
	v, err := h.Ext.Require(key)
	if err != nil {
		h.keep(err)
	}
	return v
}

func (h *ExtReader) int64Field(key string, required bool, def int64) int64 {
	v, ok, err := h.Ext.GetInt64(key)
	return h.checked(key, required, ok, err, v, def)
}

func (h *ExtReader) int32Field(key string, required bool, def int32) int32 {
	v, ok, err := h.Ext.GetInt32(key)
	return int32(h.checked(key, required, ok, err, int64(v), int64(def)))
}

// checked turns a typed getter's answer into the value or def, keeping the error
// of an absent required or a malformed field.
func (h *ExtReader) checked(key string, required, ok bool, err error, v, def int64) int64 {
	switch {
	case !ok:
		if required {
			h.keep(MissingField(key))
		}
		return def
	case err != nil:
		h.keep(err)
		return def
	}
	return v
}

// ReqInt32 returns a required int field.
func (h *ExtReader) ReqInt32(key string) int32 { return h.int32Field(key, true, 0) }

// ReqInt64 returns a required long field.
func (h *ExtReader) ReqInt64(key string) int64 { return h.int64Field(key, true, 0) }

// OptInt32 returns an optional int field, def when absent or malformed (a
// malformed one is still reported by Err).
func (h *ExtReader) OptInt32(key string, def int32) int32 { return h.int32Field(key, false, def) }

// OptInt64 returns an optional long field, as OptInt32.
func (h *ExtReader) OptInt64(key string, def int64) int64 { return h.int64Field(key, false, def) }

// OptBool is Boolean.parseBoolean of an optional field.
func (h *ExtReader) OptBool(key string) bool {
	v, _ := h.Ext.GetBool(key)
	return v
}

// OptInt32Set returns an optional int field and whether it was present (a
// Java Integer that may be null).
func (h *ExtReader) OptInt32Set(key string) (int32, bool) {
	_, ok := h.Ext.Get(key)
	return h.int32Field(key, false, 0), ok
}

// OptInt64Set returns an optional long field and whether it was present.
func (h *ExtReader) OptInt64Set(key string) (int64, bool) {
	_, ok := h.Ext.Get(key)
	return h.int64Field(key, false, 0), ok
}
