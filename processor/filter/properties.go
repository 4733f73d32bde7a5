package filter

import "strings"

// source is where a property name is looked up during one evaluation: either
// an encoded properties string (name 0x01 value 0x02 ...) or a caller's function.
type source struct {
	props string
	get   func(name string) (string, bool)
}

func (s *source) lookup(name string) (string, bool) {
	if s.get != nil {
		return s.get(name)
	}
	return LookupProperty(s.props, name)
}

// LookupProperty finds name in an encoded properties string the way
// MessageDecoder.string2messageProperties reads it: pairs are split on 0x02, the
// first 0x01 of a pair separates a non-empty name from a non-empty value (which may
// contain further 0x01), malformed pairs are skipped, and a later pair with the same
// name wins (HashMap.put). It does not allocate.
func LookupProperty(props, name string) (string, bool) {
	// A name holding 0x01 could never be read back (the pair splits earlier).
	if name == "" || strings.IndexByte(name, 0x01) >= 0 {
		return "", false
	}
	var val string
	found := false
	for len(props) > 0 {
		pair := props
		if i := strings.IndexByte(props, 0x02); i >= 0 {
			pair, props = props[:i], props[i+1:]
		} else {
			props = ""
		}
		if len(pair) <= len(name)+1 || pair[len(name)] != 0x01 || pair[:len(name)] != name {
			continue
		}
		val, found = pair[len(name)+1:], true
	}
	return val, found
}
