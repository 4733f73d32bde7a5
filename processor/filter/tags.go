package filter

import (
	"strings"

	"rmqd/compat"
)

// SubAll is the subscription string that selects every message.
const SubAll = "*"

// ParseTags splits a tag subscription the way FilterAPI.buildSubscriptionData does:
// "" or "*" selects everything; otherwise the string is split on "||", each piece
// trimmed (Java String.trim: code points <= ' '), empty pieces skipped, duplicates
// dropped. codes[i] is the Java String.hashCode of tags[i] (codes are de-duplicated
// separately, as Java's codeSet is a HashSet<Integer>, so len(codes) may be smaller
// when two tags collide).
func ParseTags(subString string) (tags []string, codes []int32, all bool) {
	if subString == "" || subString == SubAll {
		return nil, nil, true
	}
	rest := subString
	for {
		piece, tail, found := strings.Cut(rest, "||")
		if t := javaTrim(piece); t != "" && !containsString(tags, t) {
			tags = append(tags, t)
			if c := compat.JavaStringHash(t); !containsCode(codes, c) {
				codes = append(codes, c)
			}
		}
		if !found {
			break
		}
		rest = tail
	}
	return tags, codes, false
}

// onlySeparators reports whether Java's subString.split("\\|\\|") yields an empty
// array, which FilterAPI rejects with "subString split error": a non-empty string
// made only of "||" pairs.
func onlySeparators(s string) bool {
	if s == "" || len(s)%2 != 0 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] != '|' {
			return false
		}
	}
	return true
}

// javaTrim is Java's String.trim: it strips leading and trailing chars <= U+0020
// (all ASCII control characters and space), nothing else.
func javaTrim(s string) string {
	i, j := 0, len(s)
	for i < j && s[i] <= ' ' {
		i++
	}
	for j > i && s[j-1] <= ' ' {
		j--
	}
	return s[i:j]
}

func containsString(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func containsCode(list []int32, c int32) bool {
	for _, v := range list {
		if v == c {
			return true
		}
	}
	return false
}
