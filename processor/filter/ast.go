package filter

// vkind is the Java class of a runtime value. Properties are always String; the
// number kinds are the boxed types the Java parser creates (Integer for decimal
// literals that fit, Long otherwise, Double for decimals with a point/exponent).
type vkind uint8

const (
	vNull vkind = iota
	vBool
	vInt  // java.lang.Integer, held in i
	vLong // java.lang.Long, held in i
	vDouble
	vString
)

type value struct {
	kind vkind
	b    bool
	i    int64
	f    float64
	s    string
}

var (
	nullValue  = value{kind: vNull}
	trueValue  = value{kind: vBool, b: true}
	falseValue = value{kind: vBool}
)

func boolValue(b bool) value {
	if b {
		return trueValue
	}
	return falseValue
}

func (v value) isNumber() bool { return v.kind == vInt || v.kind == vLong || v.kind == vDouble }

// nodeKind mirrors the Java expression classes the parser builds.
type nodeKind uint8

const (
	nConst    nodeKind = iota // ConstantExpression / BooleanConstantExpression
	nProp                     // PropertyExpression
	nNeg                      // UnaryExpression.createNegate
	nBoolCast                 // UnaryExpression.createBooleanCast
	nNot                      // UnaryExpression.createNOT
	nAnd                      // LogicExpression.createAND
	nOr                       // LogicExpression.createOR
	nEq                       // ComparisonExpression.doCreateEqual (also IS NULL)
	nRel                      // ComparisonExpression >, >=, <, <=
	nIn                       // UnaryInExpression (IN / NOT IN)
	nStr                      // CONTAINS / STARTSWITH / ENDSWITH and their NOTs
)

// Relational operators (node.op for nRel) and string operators (for nStr).
const (
	opGt uint8 = iota
	opGe
	opLt
	opLe
)

const (
	opContains uint8 = iota
	opStartsWith
	opEndsWith
)

type node struct {
	kind nodeKind
	op   uint8
	not  bool
	// boolExpr marks Java's BooleanExpression interface, which the parser's
	// operand checks and asBooleanExpression look at.
	boolExpr bool
	a, b     int32
	val      value  // nConst
	name     string // nProp; the search string for nStr
	list     []string
	set      map[string]struct{} // nIn with many elements
	depth    int32
	slot     int32 // nProp: index into Expression.names, or -1 past maxSlots
}
