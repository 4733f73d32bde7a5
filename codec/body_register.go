package codec

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// MQVersion ordinals the name-server protocol branches on (MQVersion.Version).
const (
	VersionV3_0_11 int32 = 37  // RegisterBrokerBody instead of a bare TopicConfigSerializeWrapper
	VersionV4_9_4  int32 = 401 // clients from here on get standard-JSON route data from Java
	VersionV5_0_0  int32 = 413 // compressed RegisterBrokerBody carries topic queue mappings
)

// MaxRegisterBodyInflated bounds what a compressed RegisterBrokerBody may inflate
// to: room for some 600,000 topics at ~100 bytes each, far above a real
// broker's table, while a body of a few hundred KiB can no longer claim the
// gigabytes 256 MiB of topic lines parse into (Java inflates without a cap).
const MaxRegisterBodyInflated = 64 << 20

// RegisterBrokerBody is the REGISTER_BROKER body: the broker's topic table and
// filter servers.
type RegisterBrokerBody struct {
	TopicConfigSerializeWrapper TopicConfigSerializeWrapper
	FilterServerList            []string
}

// AppendJSON appends the plain (compressed=false) form:
// {"filterServerList":[],"topicConfigSerializeWrapper":{…}}.
func (b *RegisterBrokerBody) AppendJSON(dst []byte) []byte {
	dst = append(dst, `{"filterServerList":`...)
	dst = AppendJSONStringSlice(dst, b.FilterServerList)
	dst = append(dst, `,"topicConfigSerializeWrapper":`...)
	dst = b.TopicConfigSerializeWrapper.AppendJSON(dst)
	return append(dst, '}')
}

// Encode returns the body in the form the compressed header flag announces:
// plain JSON, or RegisterBrokerBody.encode(true)'s zlib stream (best compression)
// of length-prefixed parts: DataVersion JSON, topic count and each topic's text
// form, filter-server list JSON, then the topic-queue-mapping count and entries
// that 5.x name servers read from brokers >= V5_0_0.
func (b *RegisterBrokerBody) Encode(compressed bool) ([]byte, error) {
	if !compressed {
		return b.AppendJSON(nil), nil
	}
	var raw []byte
	w := &b.TopicConfigSerializeWrapper
	raw = appendLenPrefixed(raw, w.DataVersion.AppendJSON(nil))
	raw = binary.BigEndian.AppendUint32(raw, uint32(len(w.TopicConfigTable)))
	var text []byte
	for _, name := range SortedKeys(w.TopicConfigTable) {
		text = w.TopicConfigTable[name].AppendText(text[:0])
		raw = appendLenPrefixed(raw, text)
	}
	raw = appendLenPrefixed(raw, AppendJSONStringSlice(nil, b.FilterServerList))
	raw = binary.BigEndian.AppendUint32(raw, uint32(len(w.TopicQueueMappingInfoMap)))
	for _, topic := range SortedKeys(w.TopicQueueMappingInfoMap) {
		raw = appendLenPrefixed(raw, w.TopicQueueMappingInfoMap[topic].AppendJSON(nil))
	}

	var out bytes.Buffer
	zw, err := zlib.NewWriterLevel(&out, zlib.BestCompression)
	if err != nil {
		return nil, fmt.Errorf("compress RegisterBrokerBody: %w", err)
	}
	if _, err := zw.Write(raw); err != nil {
		return nil, fmt.Errorf("compress RegisterBrokerBody: %w", err)
	}
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("compress RegisterBrokerBody: %w", err)
	}
	return out.Bytes(), nil
}

func appendLenPrefixed(dst, part []byte) []byte {
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(part)))
	return append(dst, part...)
}

// DecodeRegisterBrokerBody parses a REGISTER_BROKER body. compressed is the
// header's flag; brokerVersion the request's version (the topic-queue-mapping part
// of the compressed form is read only from brokers >= V5_0_0, as Java does). An
// empty body yields an empty table with a zero DataVersion, as Java's name server
// makes of a missing body.
func DecodeRegisterBrokerBody(body []byte, compressed bool, brokerVersion int32) (*RegisterBrokerBody, error) {
	if len(body) == 0 {
		return &RegisterBrokerBody{TopicConfigSerializeWrapper: TopicConfigSerializeWrapper{
			TopicConfigTable: map[string]*TopicConfig{}}}, nil
	}
	if !compressed {
		var j struct {
			FilterServerList            []string                `json:"filterServerList"`
			TopicConfigSerializeWrapper *topicConfigWrapperJSON `json:"topicConfigSerializeWrapper"`
		}
		if err := decodeBodyJSON(body, &j, "RegisterBrokerBody"); err != nil {
			return nil, err
		}
		b := &RegisterBrokerBody{FilterServerList: j.FilterServerList}
		if j.TopicConfigSerializeWrapper != nil {
			b.TopicConfigSerializeWrapper = j.TopicConfigSerializeWrapper.value()
		} else {
			b.TopicConfigSerializeWrapper.TopicConfigTable = map[string]*TopicConfig{}
		}
		return b, nil
	}
	return decodeCompressedRegisterBody(body, brokerVersion)
}

var errInflatedTooLarge = errors.New("inflated body exceeds limit")

type inflateReader struct {
	r    io.Reader
	left int64
	buf  [4]byte
}

func (r *inflateReader) int32() (int32, error) {
	if _, err := io.ReadFull(r.r, r.buf[:]); err != nil {
		return 0, err
	}
	return int32(binary.BigEndian.Uint32(r.buf[:])), nil
}

// part reads an int32 length and that many bytes.
func (r *inflateReader) part() ([]byte, error) {
	n, err := r.int32()
	if err != nil {
		return nil, err
	}
	if n < 0 {
		return nil, fmt.Errorf("negative part length %d", n)
	}
	if int64(n) > r.left {
		return nil, errInflatedTooLarge
	}
	r.left -= int64(n)
	// Grow as data arrives rather than trusting n up front.
	var buf bytes.Buffer
	if _, err := io.CopyN(&buf, r.r, int64(n)); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func decodeCompressedRegisterBody(body []byte, brokerVersion int32) (*RegisterBrokerBody, error) {
	zr, err := zlib.NewReader(bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("decode compressed RegisterBrokerBody: %w", err)
	}
	defer zr.Close()
	r := &inflateReader{r: io.LimitReader(zr, MaxRegisterBodyInflated), left: MaxRegisterBodyInflated}
	fail := func(what string, err error) (*RegisterBrokerBody, error) {
		return nil, fmt.Errorf("decode compressed RegisterBrokerBody %s: %w", what, err)
	}

	dv, err := r.part()
	if err != nil {
		return fail("data version", err)
	}
	b := &RegisterBrokerBody{}
	w := &b.TopicConfigSerializeWrapper
	if w.DataVersion, err = DecodeDataVersion(dv); err != nil {
		return fail("data version", err)
	}
	count, err := r.int32()
	if err != nil {
		return fail("topic count", err)
	}
	if count < 0 {
		return fail("topic count", fmt.Errorf("negative count %d", count))
	}
	w.TopicConfigTable = make(map[string]*TopicConfig, min(int(count), 4096))
	for i := int32(0); i < count; i++ {
		text, err := r.part()
		if err != nil {
			return fail("topic config", err)
		}
		tc, err := ParseTopicConfigText(string(text))
		if err != nil {
			return fail("topic config", err)
		}
		w.TopicConfigTable[tc.TopicName] = &tc
	}
	fs, err := r.part()
	if err != nil {
		return fail("filter server list", err)
	}
	// Java ignores a filter-server list that does not parse.
	if strict, err := StrictJSON(fs); err == nil {
		_ = UnmarshalBody(strict, &b.FilterServerList)
	}
	if brokerVersion < VersionV5_0_0 {
		return b, nil
	}
	n, err := r.int32()
	if errors.Is(err, io.EOF) {
		return b, nil // a broker that wrote no mapping part at all
	}
	if err != nil {
		return fail("topic queue mappings", err)
	}
	if n < 0 {
		return fail("topic queue mappings", fmt.Errorf("negative count %d", n))
	}
	for i := int32(0); i < n; i++ {
		raw, err := r.part()
		if err != nil {
			return fail("topic queue mapping", err)
		}
		info, err := DecodeTopicQueueMappingInfo(raw)
		if err != nil {
			return fail("topic queue mapping", err)
		}
		if w.TopicQueueMappingInfoMap == nil {
			w.TopicQueueMappingInfoMap = make(map[string]*TopicQueueMappingInfo)
		}
		w.TopicQueueMappingInfoMap[info.Topic] = info
	}
	return b, nil
}

// AppendText appends TopicConfig.encode()'s text form used by the compressed
// body: "name read write perm filterType attributesJson" separated by single
// spaces (topicSysFlag and order are not carried).
func (t *TopicConfig) AppendText(dst []byte) []byte {
	dst = append(dst, t.TopicName...)
	dst = append(dst, ' ')
	dst = strconv.AppendInt(dst, int64(t.ReadQueueNums), 10)
	dst = append(dst, ' ')
	dst = strconv.AppendInt(dst, int64(t.WriteQueueNums), 10)
	dst = append(dst, ' ')
	dst = strconv.AppendInt(dst, int64(t.Perm), 10)
	dst = append(dst, ' ')
	dst = append(dst, t.filterType()...)
	dst = append(dst, ' ')
	return AppendJSONStringMap(dst, t.Attributes)
}

// ParseTopicConfigText parses TopicConfig's text form the way TopicConfig.decode
// does: at least five space-separated fields; attributes that do not parse (a
// space inside them splits the JSON) are ignored.
func ParseTopicConfigText(s string) (TopicConfig, error) {
	parts := strings.Split(s, " ")
	for len(parts) > 0 && parts[len(parts)-1] == "" { // String.split drops trailing empties
		parts = parts[:len(parts)-1]
	}
	if len(parts) < 5 {
		return TopicConfig{}, fmt.Errorf("topic config %q: %d fields, want at least 5", s, len(parts))
	}
	t := NewTopicConfig(parts[0])
	for i, dst := range []*int32{&t.ReadQueueNums, &t.WriteQueueNums, &t.Perm} {
		v, err := strconv.ParseInt(parts[i+1], 10, 32)
		if err != nil {
			return TopicConfig{}, fmt.Errorf("topic config %q: %w", s, err)
		}
		*dst = int32(v)
	}
	switch parts[4] {
	case TopicFilterSingleTag, TopicFilterMultiTag:
		t.TopicFilterType = parts[4]
	default:
		return TopicConfig{}, fmt.Errorf("topic config %q: unknown filter type %q", s, parts[4])
	}
	t.Attributes = map[string]string{}
	if len(parts) >= 6 {
		if strict, err := StrictJSON([]byte(parts[5])); err == nil {
			var attrs map[string]string
			if UnmarshalBody(strict, &attrs) == nil && attrs != nil {
				t.Attributes = attrs
			}
		}
	}
	return t, nil
}
