package filter

import (
	"errors"
	"fmt"
	"math"
	"strconv"
)

// ErrInvalidExpression wraps every failure to compile an expression: a bad SQL92
// selector, or a tag string that Java's split leaves empty, such as "||" (the
// broker answers SUBSCRIPTION_PARSE_FAILED).
var ErrInvalidExpression = errors.New("invalid filter expression")

// Limits that stand in for the JVM stack (1 MiB per thread by default). Java turns
// a StackOverflowError while parsing into a parse failure, and one while
// evaluating into "no match"; Go would die instead. Measured on the JVM: 1000
// nested parentheses parse and 2000 do not (about 7 frames a level), 2000 NOTs
// parse and 5000 or more sometimes do (it depends on the JIT); 5000 chained ANDs
// evaluate and 10000 do not.
const (
	maxParseFrames = 8000 // a unary operator costs 1, a parenthesis 7
	parenFrames    = 6
	maxEvalDepth   = 7500 // deeper trees compile but never match
)

type parser struct {
	lx    lexer
	buf   [2]token
	nbuf  int
	nodes []node
	nest  int
	// tooDeep is set when the tree is deeper than Java could evaluate.
	tooDeep bool
}

// parseSQL92 runs the SelectorParser grammar (JmsSelector). Like Java it stops
// after the first complete expression: trailing tokens are not read, except the
// one token every loop peeks at.
func parseSQL92(src string) (*parser, int32, error) {
	p := &parser{lx: lexer{src: src}}
	root, err := p.orExpr()
	if err == nil {
		root, err = p.asBoolean(root)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("%w: %w", ErrInvalidExpression, err)
	}
	return p, root, nil
}

func (p *parser) peek(k int) (token, error) {
	for p.nbuf <= k {
		t, err := p.lx.next()
		if err != nil {
			return token{}, err
		}
		p.buf[p.nbuf] = t
		p.nbuf++
	}
	return p.buf[k], nil
}

func (p *parser) peekKind(k int) (tokKind, error) {
	t, err := p.peek(k)
	return t.kind, err
}

func (p *parser) consume() token {
	t := p.buf[0]
	p.buf[0] = p.buf[1]
	p.nbuf--
	return t
}

func (p *parser) expect(k tokKind) (token, error) {
	t, err := p.peek(0)
	if err != nil {
		return t, err
	}
	if t.kind != k {
		return t, unexpected(t, k.String())
	}
	return p.consume(), nil
}

func unexpected(t token, want string) error {
	if t.kind == tEOF {
		return fmt.Errorf("expected %s, got end of input", want)
	}
	return fmt.Errorf("expected %s, got %q at offset %d", want, t.text, t.pos)
}

func (p *parser) add(n node) (int32, error) {
	var d int32
	if n.kind != nConst && n.kind != nProp {
		d = p.nodes[n.a].depth
		if n.kind == nAnd || n.kind == nOr || n.kind == nEq || n.kind == nRel {
			d = max(d, p.nodes[n.b].depth)
		}
	}
	n.depth = d + 1
	if n.depth > maxEvalDepth {
		p.tooDeep = true
	}
	p.nodes = append(p.nodes, n)
	return int32(len(p.nodes) - 1), nil
}

func (p *parser) orExpr() (int32, error) {
	left, err := p.andExpr()
	for err == nil {
		var k tokKind
		if k, err = p.peekKind(0); err != nil || k != tOr {
			break
		}
		p.consume()
		var right int32
		if right, err = p.andExpr(); err != nil {
			break
		}
		left, err = p.logic(nOr, left, right)
	}
	return left, err
}

func (p *parser) andExpr() (int32, error) {
	left, err := p.equalityExpr()
	for err == nil {
		var k tokKind
		if k, err = p.peekKind(0); err != nil || k != tAnd {
			break
		}
		p.consume()
		var right int32
		if right, err = p.equalityExpr(); err != nil {
			break
		}
		left, err = p.logic(nAnd, left, right)
	}
	return left, err
}

func (p *parser) equalityExpr() (int32, error) {
	left, err := p.comparisonExpr()
	for err == nil {
		var k tokKind
		if k, err = p.peekKind(0); err != nil {
			break
		}
		switch k {
		case tEq, tNe:
			p.consume()
			var right int32
			if right, err = p.comparisonExpr(); err != nil {
				break
			}
			if left, err = p.equal(left, right); err == nil && k == tNe {
				left, err = p.not(left)
			}
		case tIs:
			var k1 tokKind
			if k1, err = p.peekKind(1); err != nil {
				break
			}
			p.consume()
			negate := false
			if k1 == tNot {
				p.consume()
				negate = true
			}
			if _, err = p.expect(tNull); err != nil {
				break
			}
			if left, err = p.isNull(left); err == nil && negate {
				left, err = p.not(left)
			}
		default:
			return left, nil
		}
	}
	return left, err
}

func (p *parser) comparisonExpr() (int32, error) {
	left, err := p.unaryExpr()
	for err == nil {
		var k tokKind
		if k, err = p.peekKind(0); err != nil {
			break
		}
		negate := false
		if k == tNot {
			// NOT here must start NOT CONTAINS/STARTSWITH/ENDSWITH/BETWEEN/IN.
			if k, err = p.peekKind(1); err != nil {
				break
			}
			switch k {
			case tContains, tStartsWith, tEndsWith, tBetween, tIn:
			default:
				t, _ := p.peek(1)
				return 0, unexpected(t, "CONTAINS, STARTSWITH, ENDSWITH, BETWEEN or IN after NOT")
			}
			p.consume()
			negate = true
		}
		switch k {
		case tGt, tGe, tLt, tLe:
			p.consume()
			var right int32
			if right, err = p.unaryExpr(); err != nil {
				break
			}
			left, err = p.relational(uint8(k-tGt), left, right)
		case tContains, tStartsWith, tEndsWith:
			p.consume()
			var t token
			if t, err = p.expect(tString); err != nil {
				break
			}
			left, err = p.add(node{kind: nStr, op: uint8(k - tContains), not: negate, boolExpr: true,
				a: left, name: decodeString(t.text)})
		case tBetween:
			p.consume()
			var low, high int32
			if low, err = p.unaryExpr(); err != nil {
				break
			}
			if _, err = p.expect(tAnd); err != nil {
				break
			}
			if high, err = p.unaryExpr(); err != nil {
				break
			}
			left, err = p.between(left, low, high, negate)
		case tIn:
			p.consume()
			left, err = p.inList(left, negate)
		default:
			return left, nil
		}
	}
	return left, err
}

func (p *parser) inList(left int32, negate bool) (int32, error) {
	if _, err := p.expect(tLParen); err != nil {
		return 0, err
	}
	var list []string
	for {
		t, err := p.expect(tString)
		if err != nil {
			return 0, err
		}
		list = append(list, decodeString(t.text))
		k, err := p.peekKind(0)
		if err != nil {
			return 0, err
		}
		if k != tComma {
			break
		}
		p.consume()
	}
	if _, err := p.expect(tRParen); err != nil {
		return 0, err
	}
	if p.nodes[left].kind != nProp {
		return 0, errors.New("IN needs a property on its left")
	}
	n := node{kind: nIn, not: negate, boolExpr: true, a: left, list: list}
	if len(list) >= 5 {
		n.set = make(map[string]struct{}, len(list))
		for _, s := range list {
			n.set[s] = struct{}{}
		}
	}
	return p.add(n)
}

func (p *parser) unaryExpr() (int32, error) {
	p.nest++
	defer func() { p.nest-- }()
	if p.nest > maxParseFrames {
		return 0, errors.New("expression too deeply nested")
	}
	t, err := p.peek(0)
	if err != nil {
		return 0, err
	}
	switch t.kind {
	case tPlus:
		p.consume()
		return p.unaryExpr()
	case tMinus:
		p.consume()
		x, err := p.unaryExpr()
		if err != nil {
			return 0, err
		}
		return p.add(node{kind: nNeg, a: x})
	case tNot:
		p.consume()
		x, err := p.unaryExpr()
		if err != nil {
			return 0, err
		}
		if x, err = p.asBoolean(x); err != nil {
			return 0, err
		}
		return p.not(x)
	case tString:
		p.consume()
		return p.add(node{kind: nConst, val: value{kind: vString, s: decodeString(t.text)}})
	case tDecimal:
		p.consume()
		v, err := decimalLiteral(t.text)
		if err != nil {
			return 0, err
		}
		return p.add(node{kind: nConst, val: v})
	case tFloat:
		p.consume()
		v, err := floatLiteral(t.text)
		if err != nil {
			return 0, err
		}
		return p.add(node{kind: nConst, val: v})
	case tTrue, tFalse, tNull:
		p.consume()
		v := nullValue
		if t.kind != tNull {
			v = boolValue(t.kind == tTrue)
		}
		return p.add(node{kind: nConst, boolExpr: true, val: v})
	case tID:
		p.consume()
		return p.add(node{kind: nProp, name: t.text})
	case tLParen:
		p.consume()
		p.nest += parenFrames
		x, err := p.orExpr()
		p.nest -= parenFrames
		if err != nil {
			return 0, err
		}
		if _, err := p.expect(tRParen); err != nil {
			return 0, err
		}
		return x, nil
	}
	return 0, unexpected(t, "a value")
}

// decimalLiteral is ConstantExpression.createFromDecimal: drop an l/L suffix,
// parse as a long (overflow is an error), narrow to Integer when it fits.
func decimalLiteral(text string) (value, error) {
	if n := len(text); text[n-1] == 'l' || text[n-1] == 'L' {
		text = text[:n-1]
	}
	i, err := strconv.ParseInt(text, 10, 64)
	if err != nil {
		return value{}, fmt.Errorf("integer literal %s out of range", text)
	}
	if i >= math.MinInt32 && i <= math.MaxInt32 {
		return value{kind: vInt, i: i}, nil
	}
	return value{kind: vLong, i: i}, nil
}

// floatLiteral is ConstantExpression.createFloat, which rejects infinity and, by
// comparing with Double.MIN_VALUE, every literal that is zero.
func floatLiteral(text string) (value, error) {
	f, ok := javaParseDouble(text)
	if !ok {
		return value{}, fmt.Errorf("bad decimal literal %s", text)
	}
	if f > math.MaxFloat64 || f < math.SmallestNonzeroFloat64 {
		return value{}, fmt.Errorf("decimal literal %s out of range", text)
	}
	return value{kind: vDouble, f: f}, nil
}

// asBoolean is SelectorParser.asBooleanExpression: boolean expressions pass, a bare
// property becomes a boolean cast, anything else is an error.
func (p *parser) asBoolean(x int32) (int32, error) {
	n := &p.nodes[x]
	if n.boolExpr {
		return x, nil
	}
	if n.kind == nProp {
		return p.add(node{kind: nBoolCast, boolExpr: true, a: x})
	}
	return 0, errors.New("expression will not result in a boolean value")
}

func (p *parser) logic(kind nodeKind, left, right int32) (int32, error) {
	l, err := p.asBoolean(left)
	if err != nil {
		return 0, err
	}
	r, err := p.asBoolean(right)
	if err != nil {
		return 0, err
	}
	return p.add(node{kind: kind, boolExpr: true, a: l, b: r})
}

func (p *parser) not(x int32) (int32, error) {
	return p.add(node{kind: nNot, boolExpr: true, a: x})
}

// equal is ComparisonExpression.createEqual with its operand checks: no NULL
// literal on either side, and TRUE/FALSE cannot be compared with another literal
// that is not boolean when it stands on the left.
func (p *parser) equal(left, right int32) (int32, error) {
	l, r := &p.nodes[left], &p.nodes[right]
	if l.kind == nConst && l.val.kind == vNull || r.kind == nConst && r.val.kind == vNull {
		return 0, errors.New("NULL cannot be compared, use IS NULL")
	}
	if l.kind == nConst && r.kind == nConst && l.boolExpr && !r.boolExpr {
		return 0, errors.New("a boolean literal cannot be compared with a non-boolean literal")
	}
	return p.add(node{kind: nEq, boolExpr: true, a: left, b: right})
}

func (p *parser) isNull(left int32) (int32, error) {
	null, err := p.add(node{kind: nConst, boolExpr: true, val: nullValue})
	if err != nil {
		return 0, err
	}
	return p.add(node{kind: nEq, boolExpr: true, a: left, b: null})
}

// relational is createGreaterThan & co. with checkLessThanOperand: literals must
// be numbers and boolean expressions are refused.
func (p *parser) relational(op uint8, left, right int32) (int32, error) {
	for _, x := range [2]int32{left, right} {
		n := &p.nodes[x]
		if n.kind == nConst && !n.val.isNumber() || n.kind != nConst && n.boolExpr {
			return 0, errors.New("only numbers can be compared with >, >=, < or <=")
		}
	}
	return p.add(node{kind: nRel, op: op, boolExpr: true, a: left, b: right})
}

// between is createBetween (a >= low AND a <= high, with literal bounds required
// to be in order) or createNotBetween (a < low OR a > high, unchecked).
func (p *parser) between(v, low, high int32, negate bool) (int32, error) {
	if negate {
		l, err := p.relational(opLt, v, low)
		if err != nil {
			return 0, err
		}
		h, err := p.relational(opGt, v, high)
		if err != nil {
			return 0, err
		}
		return p.add(node{kind: nOr, boolExpr: true, a: l, b: h})
	}
	lo, hi := &p.nodes[low], &p.nodes[high]
	if lo.kind == nConst && hi.kind == nConst {
		if lo.val.kind == vNull || hi.val.kind == vNull {
			return 0, errors.New("BETWEEN bounds cannot be NULL")
		}
		c, ok := javaCompare(hi.val, lo.val)
		if !ok || c < 0 {
			return 0, errors.New("BETWEEN lower bound is above the upper bound")
		}
	}
	l, err := p.relational(opGe, v, low)
	if err != nil {
		return 0, err
	}
	h, err := p.relational(opLe, v, high)
	if err != nil {
		return 0, err
	}
	return p.add(node{kind: nAnd, boolExpr: true, a: l, b: h})
}
