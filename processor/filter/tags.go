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
// when two tags collide). The tags never alias subString, which may live in a
// reused network buffer.
func ParseTags(subString string) (tags []string, codes []int32, all bool) {
	if subString == "" || subString == SubAll {
		return nil, nil, true
	}
	subString = strings.Clone(subString)
	// Maps keep de-duplication linear for absurdly long subscriptions.
	var seenTags map[string]struct{}
	var seenCodes map[int32]struct{}
	rest := subString
	for {
		piece, tail, found := strings.Cut(rest, "||")
		if t := javaTrim(piece); t != "" {
			if seenTags == nil && len(tags) >= smallSet {
				seenTags, seenCodes = make(map[string]struct{}), make(map[int32]struct{})
				for _, v := range tags {
					seenTags[v] = struct{}{}
				}
				for _, c := range codes {
					seenCodes[c] = struct{}{}
				}
			}
			c := compat.JavaStringHash(t)
			if seenTags != nil {
				if _, dup := seenTags[t]; !dup {
					seenTags[t] = struct{}{}
					tags = append(tags, t)
					if _, dup := seenCodes[c]; !dup {
						seenCodes[c] = struct{}{}
						codes = append(codes, c)
					}
				}
			} else if !containsString(tags, t) {
				tags = append(tags, t)
				if !containsCode(codes, c) {
					codes = append(codes, c)
				}
			}
		}
		if !found {
			break
		}
		rest = tail
	}
	return tags, codes, false
}

// smallSet is the size up to which tag and code sets are searched linearly.
const smallSet = 8

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
