package filter

import "rmqd/codec"

// maxSlots is how many distinct property names an expression may reference and
// still have them all picked out of the properties in one pass.
const maxSlots = 16

// source is where property values come from during one evaluation: an encoded
// properties string (name 0x01 value 0x02 ...) or a caller's function. It lives
// on the evaluating goroutine's stack.
type source struct {
	props string
	get   func(name string) (string, bool)
	// One pass over props fills vals for the expression's names (by slot).
	filled bool
	found  [maxSlots]bool
	vals   [maxSlots]string
}

// lookup follows MessageDecoder.string2messageProperties (as codec.PropertyValue
// does): malformed pairs are skipped and the last of repeated names wins.
func (s *source) lookup(e *Expression, n *node) (string, bool) {
	if s.get != nil {
		return s.get(n.name)
	}
	if n.slot < 0 {
		return codec.PropertyValue(s.props, n.name)
	}
	if !s.filled {
		s.fill(e.names)
	}
	return s.vals[n.slot], s.found[n.slot]
}

func (s *source) fill(names []string) {
	s.filled = true
	codec.PropertyValues(s.props, names, s.vals[:], s.found[:])
}
