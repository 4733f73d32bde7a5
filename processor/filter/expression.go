package filter

import (
	"errors"
	"fmt"
	"strings"

	"rmqd/codec"
	"rmqd/compat"
)

// Expression types (ExpressionType.java).
const (
	TypeTag   = "TAG"
	TypeSQL92 = "SQL92"
)

// ErrUnsupportedType is returned by Compile for an expression type other than
// TAG, "" or SQL92 (Java compares these case-sensitively).
var ErrUnsupportedType = errors.New("unsupported filter expression type")

// Expression is a compiled subscription. It is immutable and safe for concurrent
// use; it implements store.MessageFilter.
type Expression struct {
	sql   bool
	expr  string
	all   bool
	tags  []string
	codes []int32
	// Sets for subscriptions with more than smallSet tags.
	tagSet  map[string]struct{}
	codeSet map[int32]struct{}
	nodes   []node
	root    int32
	names   []string // distinct property names, by node slot
	// tooDeep: Java would overflow its stack evaluating this tree, so nothing matches.
	tooDeep bool
}

// Compile builds a filter for a subscription. expressionType "" or "TAG" reads
// expression as tags ("a || b", "*", "" = all); "SQL92" parses a selector. Errors
// wrap ErrInvalidExpression or ErrUnsupportedType. The result keeps no reference
// to the argument strings, which may live in a reused network buffer.
func Compile(expressionType, expression string) (*Expression, error) {
	expression = strings.Clone(expression)
	switch expressionType {
	case "", TypeTag:
		if onlySeparators(expression) {
			return nil, fmt.Errorf("%w: tag expression %q has no tags", ErrInvalidExpression, expression)
		}
		tags, codes, all := ParseTags(expression)
		if all {
			expression = SubAll
		}
		e := &Expression{expr: expression, all: all, tags: tags, codes: codes}
		if len(tags) > smallSet {
			e.tagSet = make(map[string]struct{}, len(tags))
			for _, t := range tags {
				e.tagSet[t] = struct{}{}
			}
			e.codeSet = make(map[int32]struct{}, len(codes))
			for _, c := range codes {
				e.codeSet[c] = struct{}{}
			}
		}
		return e, nil
	case TypeSQL92:
		if expression == "" {
			return nil, fmt.Errorf("%w: empty SQL92 expression", ErrInvalidExpression)
		}
		p, root, err := parseSQL92(expression)
		if err != nil {
			return nil, err
		}
		e := &Expression{sql: true, expr: expression, nodes: p.nodes, root: root, tooDeep: p.tooDeep}
		e.assignSlots()
		return e, nil
	}
	return nil, fmt.Errorf("%w: %q", ErrUnsupportedType, expressionType)
}

// assignSlots numbers the distinct property names so that one pass over a
// message's properties finds them all.
func (e *Expression) assignSlots() {
	for i := range e.nodes {
		n := &e.nodes[i]
		if n.kind != nProp {
			continue
		}
		n.slot = -1
		for j, name := range e.names {
			if name == n.name {
				n.slot = int32(j)
			}
		}
		if n.slot < 0 && len(e.names) < maxSlots {
			n.slot = int32(len(e.names))
			e.names = append(e.names, n.name)
		}
	}
}

// Type is TypeTag or TypeSQL92.
func (e *Expression) Type() string {
	if e.sql {
		return TypeSQL92
	}
	return TypeTag
}

// String is the expression as compiled ("*" for an all-tags subscription).
func (e *Expression) String() string { return e.expr }

// All reports a tag subscription to every message.
func (e *Expression) All() bool { return !e.sql && e.all }

// Tags are the distinct tags of a tag subscription, in input order (nil for SQL92
// and for "*"). The slice must not be modified.
func (e *Expression) Tags() []string { return e.tags }

// TagCodes are the distinct String.hashCode values of Tags. Must not be modified.
func (e *Expression) TagCodes() []int32 { return e.codes }

// MatchTagsCode is the consume-queue check (isMatchedByConsumeQueue): a tag
// subscription matches "*" or a tags code in its code set, compared as Java's
// tagsCode.intValue(); SQL92 always passes here (no bloom filter).
func (e *Expression) MatchTagsCode(tagsCode int64) bool {
	if e.sql || e.all {
		return true
	}
	if e.codeSet != nil {
		_, ok := e.codeSet[int32(tagsCode)]
		return ok
	}
	return containsCode(e.codes, int32(tagsCode))
}

// MatchRecord is the commitlog check (isMatchedByCommitLog) on a whole stored
// record: a tag subscription passes without looking (the broker only filters tags
// by hash, clients re-check the exact tag), SQL92 is evaluated on the record's
// properties. A record too short to hold its properties does not match.
func (e *Expression) MatchRecord(record []byte) bool {
	if !e.sql {
		return true
	}
	props, ok := recordProperties(record)
	if !ok {
		return false
	}
	return e.evalProps(props)
}

// MatchEncodedProperties is MatchRecord for an encoded properties string (name
// 0x01 value 0x02 ...), as long polling gets it from the store's arrival notice.
func (e *Expression) MatchEncodedProperties(props string) bool {
	if !e.sql {
		return true
	}
	return e.evalProps(props)
}

// MatchProperties evaluates the filter against properties read through get (nil
// means no properties). A tag subscription checks the exact TAGS value against its
// tag set, as the clients do after pulling; SQL92 is evaluated.
func (e *Expression) MatchProperties(get func(name string) (string, bool)) bool {
	if !e.sql {
		if e.all {
			return true
		}
		if get == nil {
			return false
		}
		tag, ok := get(codec.PropTags)
		if !ok {
			return false
		}
		if e.tagSet != nil {
			_, ok = e.tagSet[tag]
			return ok
		}
		return containsString(e.tags, tag)
	}
	if get == nil {
		return e.evalProps("")
	}
	if e.tooDeep {
		return false
	}
	src := source{get: get}
	v, ok := e.eval(e.root, &src)
	return ok && v.kind == vBool && v.b
}

func (e *Expression) evalProps(props string) bool {
	if e.tooDeep {
		return false
	}
	src := source{props: props}
	v, ok := e.eval(e.root, &src)
	return ok && v.kind == vBool && v.b
}

// TagsCode is the consume-queue tags code of a tag string: its Java
// String.hashCode, 0 for no tag.
func TagsCode(tags string) int64 {
	if tags == "" {
		return 0
	}
	return int64(compat.JavaStringHash(tags))
}
