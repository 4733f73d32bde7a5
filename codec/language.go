package codec

// languageNames are LanguageCode.java's enum names by ordinal; JSON headers carry
// the name.
var languageNames = [...]string{
	LangJava:   "JAVA",
	LangCPP:    "CPP",
	LangDotNet: "DOTNET",
	LangPython: "PYTHON",
	LangDelphi: "DELPHI",
	LangErlang: "ERLANG",
	LangRuby:   "RUBY",
	LangOther:  "OTHER",
	LangHTTP:   "HTTP",
	LangGo:     "GO",
	LangPHP:    "PHP",
	LangOMS:    "OMS",
	LangRust:   "RUST",
	LangNodeJS: "NODE_JS",
}

// String returns the Java enum name, or "" for a code Java does not know (a
// binary header may carry any byte; Java decodes those as null).
func (l LanguageCode) String() string {
	if int(l) < len(languageNames) {
		return languageNames[l]
	}
	return ""
}

// Known reports whether l is one of LanguageCode.java's values.
func (l LanguageCode) Known() bool { return int(l) < len(languageNames) }

// ParseLanguage maps a Java enum name to its code.
func ParseLanguage(name string) (LanguageCode, bool) {
	for i, n := range languageNames {
		if n == name {
			return LanguageCode(i), true
		}
	}
	return LangOther, false
}
