package filter

import "rmqd/codec"

// source is where a property name is looked up during one evaluation: either
// an encoded properties string (name 0x01 value 0x02 ...) or a caller's function.
type source struct {
	props string
	get   func(name string) (string, bool)
}

// lookup follows MessageDecoder.string2messageProperties (codec.PropertyValue):
// malformed pairs are skipped and the last of repeated names wins.
func (s *source) lookup(name string) (string, bool) {
	if s.get != nil {
		return s.get(name)
	}
	return codec.PropertyValue(s.props, name)
}
