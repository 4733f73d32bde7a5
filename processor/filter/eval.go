package filter

import "strings"

// eval computes node x like Expression.evaluate in Java. ok=false stands for a
// Java exception (NumberFormatException, ClassCastException): it ends the whole
// evaluation, and the broker counts the message as not matching.
func (e *Expression) eval(x int32, src *source) (value, bool) {
	n := &e.nodes[x]
	switch n.kind {
	case nConst:
		return n.val, true
	case nProp:
		if s, found := src.lookup(e, n); found {
			return value{kind: vString, s: s}, true
		}
		return nullValue, true
	case nNeg:
		v, ok := e.eval(n.a, src)
		if !ok {
			return v, false
		}
		switch v.kind {
		case vInt:
			return value{kind: vInt, i: int64(-int32(v.i))}, true
		case vLong:
			return value{kind: vLong, i: -v.i}, true
		case vDouble:
			return value{kind: vDouble, f: -v.f}, true
		}
		return nullValue, true
	case nBoolCast:
		v, ok := e.eval(n.a, src)
		if !ok || v.kind == vNull || v.kind == vBool {
			return v, ok
		}
		return falseValue, true
	case nNot:
		v, ok := e.eval(n.a, src)
		if !ok || v.kind == vNull {
			return v, ok
		}
		if v.kind != vBool {
			return v, false
		}
		return boolValue(!v.b), true
	case nAnd:
		l, ok := e.eval(n.a, src)
		if !ok || l.kind == vBool && !l.b {
			return l, ok
		}
		r, ok := e.eval(n.b, src)
		if !ok || r.kind == vBool && !r.b {
			return r, ok
		}
		if l.kind == vNull || r.kind == vNull {
			return nullValue, true
		}
		return trueValue, true
	case nOr:
		l, ok := e.eval(n.a, src)
		if !ok || l.kind == vBool && l.b {
			return l, ok
		}
		r, ok := e.eval(n.b, src)
		if !ok || r.kind == vBool && r.b {
			return r, ok
		}
		if l.kind == vNull || r.kind == vNull {
			return nullValue, true
		}
		return falseValue, true
	case nEq:
		return e.evalEqual(n, src)
	case nRel:
		return e.evalRelational(n, src)
	case nIn:
		v, ok := e.eval(n.a, src)
		if !ok || v.kind != vString {
			return nullValue, ok
		}
		return boolValue(n.contains(v.s) != n.not), true
	case nStr:
		if n.name == "" {
			return falseValue, true
		}
		v, ok := e.eval(n.a, src)
		if !ok || v.kind != vString {
			return falseValue, ok
		}
		var hit bool
		switch n.op {
		case opContains:
			hit = strings.Contains(v.s, n.name)
		case opStartsWith:
			hit = strings.HasPrefix(v.s, n.name)
		default:
			hit = strings.HasSuffix(v.s, n.name)
		}
		return boolValue(hit != n.not), true
	}
	return nullValue, false
}

func (n *node) contains(s string) bool {
	if n.set != nil {
		_, ok := n.set[s]
		return ok
	}
	for _, v := range n.list {
		if v == s {
			return true
		}
	}
	return false
}

// evalEqual is doCreateEqual's evaluate: NULL = value is NULL, value = NULL is
// FALSE, NULL = NULL is TRUE; otherwise equals(), then compareTo after Java's
// type conversions.
func (e *Expression) evalEqual(n *node, src *source) (value, bool) {
	l, ok := e.eval(n.a, src)
	if !ok {
		return l, false
	}
	r, ok := e.eval(n.b, src)
	if !ok {
		return r, false
	}
	if (l.kind == vNull) != (r.kind == vNull) {
		if l.kind == vNull {
			return nullValue, true
		}
		return falseValue, true
	}
	if l.kind == vNull || javaEquals(l, r) {
		return trueValue, true
	}
	c, ok := javaCompare(l, r)
	if !ok {
		return nullValue, false
	}
	return boolValue(c == 0), true
}

// evalRelational is ComparisonExpression.evaluate for >, >=, <, <=: NULL on either
// side is NULL, two strings are both read as doubles (failing that, Java throws).
func (e *Expression) evalRelational(n *node, src *source) (value, bool) {
	l, ok := e.eval(n.a, src)
	if !ok || l.kind == vNull {
		return l, ok
	}
	r, ok := e.eval(n.b, src)
	if !ok || r.kind == vNull {
		return r, ok
	}
	var c int
	if l.kind == vString && r.kind == vString {
		lf, ok1 := javaParseDouble(l.s)
		rf, ok2 := javaParseDouble(r.s)
		if !ok1 || !ok2 {
			return nullValue, false
		}
		c = javaDoubleCompare(lf, rf)
	} else if c, ok = javaCompare(l, r); !ok {
		return nullValue, false
	}
	var res bool
	switch n.op {
	case opGt:
		res = c > 0
	case opGe:
		res = c >= 0
	case opLt:
		res = c < 0
	default:
		res = c <= 0
	}
	return boolValue(res), true
}

// javaEquals is Object.equals between two non-null values of our kinds.
func javaEquals(l, r value) bool {
	if l.kind != r.kind {
		return false
	}
	switch l.kind {
	case vBool:
		return l.b == r.b
	case vInt, vLong:
		return l.i == r.i
	case vDouble:
		return javaDoubleBits(l.f) == javaDoubleBits(r.f)
	case vString:
		return l.s == r.s
	}
	return false
}

// javaCompare is ComparisonExpression.__compare with convertStringExpressions on
// (as it always is for parsed selectors): values of different classes are
// converted toward the right-hand or wider type, strings are parsed with
// Integer/Long/Double/Boolean.valueOf, and pairs that cannot be converted compare
// as -1. ok=false where Java throws: a string that does not parse, or a Boolean on
// the left of a String (a ClassCastException in the Java code).
func javaCompare(l, r value) (int, bool) {
	switch l.kind {
	case vBool:
		switch r.kind {
		case vBool:
			return cmpBool(l.b, r.b), true
		case vString:
			return 0, false
		}
		return -1, true
	case vInt, vLong:
		switch r.kind {
		case vInt, vLong:
			return cmpInt(l.i, r.i), true
		case vDouble:
			return javaDoubleCompare(float64(l.i), r.f), true
		case vString:
			bits := 64
			if l.kind == vInt {
				bits = 32
			}
			ri, ok := javaParseInt(r.s, bits)
			if !ok {
				return 0, false
			}
			return cmpInt(l.i, ri), true
		}
		return -1, true
	case vDouble:
		switch r.kind {
		case vInt, vLong:
			return javaDoubleCompare(l.f, float64(r.i)), true
		case vDouble:
			return javaDoubleCompare(l.f, r.f), true
		case vString:
			rf, ok := javaParseDouble(r.s)
			if !ok {
				return 0, false
			}
			return javaDoubleCompare(l.f, rf), true
		}
		return -1, true
	case vString:
		switch r.kind {
		case vString:
			return strings.Compare(l.s, r.s), true
		case vBool:
			return cmpBool(javaParseBool(l.s), r.b), true
		case vInt, vLong:
			bits := 64
			if r.kind == vInt {
				bits = 32
			}
			li, ok := javaParseInt(l.s, bits)
			if !ok {
				return 0, false
			}
			return cmpInt(li, r.i), true
		case vDouble:
			lf, ok := javaParseDouble(l.s)
			if !ok {
				return 0, false
			}
			return javaDoubleCompare(lf, r.f), true
		}
	}
	return -1, true
}

func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	default:
		return -1
	}
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	default:
		return 0
	}
}
