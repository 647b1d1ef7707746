package bootemu

import (
	"strings"
)

// A reading of the shell the bootstrap commands are written in, enough to know the words a
// command runs with: quotes removed ('…' literal, "…" expanded, \ escaping), variables expanded
// from earlier assignments (`export A=…`, `A=…`, ${A:-default}, ${A:=default}), lines cut at
// ;, &&, ||, | and subshell parentheses, here-documents skipped. What only a running host knows (a command's output,
// $(…)) expands to nothing.

// shellCommands lists the simple commands of a script, in order, as the words each runs with.
// Assignments are applied as they come and are not listed themselves.
func shellCommands(script string) [][]string {
	vars := map[string]string{}
	var out [][]string
	lines := logicalLines(script)
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		if m := heredoc.FindStringSubmatch(line); m != nil {
			_, end := heredocBody(lines[i+1:], m[2])
			i += end
		}
		for rest := line; rest != ""; {
			var words []string
			words, rest = splitCommand(rest, vars)
			words = withoutKeywords(words)
			if len(words) > 0 && !assign(words, vars) {
				out = append(out, words)
			}
		}
	}
	return out
}

// shellKeywords start a compound command; the simple command follows them.
var shellKeywords = map[string]bool{"if": true, "then": true, "else": true, "elif": true, "do": true,
	"while": true, "until": true, "!": true, "{": true, "(": true}

func withoutKeywords(words []string) []string {
	for len(words) > 0 && shellKeywords[words[0]] {
		words = words[1:]
	}
	return words
}

// assign applies `export A=… B=…` or `A=… B=…` alone on a command, and reports whether it was one.
func assign(words []string, vars map[string]string) bool {
	list := words
	if words[0] == "export" || words[0] == "local" || words[0] == "readonly" {
		list = words[1:]
	}
	for _, w := range list {
		if name, _, ok := strings.Cut(w, "="); !ok || !isName(name) {
			return false
		}
	}
	for _, w := range list {
		name, value, _ := strings.Cut(w, "=")
		vars[name] = value
	}
	return true
}

func isName(s string) bool {
	for i, r := range s {
		if r != '_' && (r < 'A' || r > 'Z') && (r < 'a' || r > 'z') && (i == 0 || r < '0' || r > '9') {
			return false
		}
	}
	return s != ""
}

// splitCommand reads the words of the first simple command of line and returns the text after
// its control operator.
func splitCommand(line string, vars map[string]string) (words []string, rest string) {
	var w strings.Builder
	// inWord is set by anything but a blank; quoted by quotes or escapes, which keep an empty
	// word a word, where an unquoted expansion to nothing leaves none.
	inWord, quoted := false, false
	end := func() {
		if inWord && (quoted || w.Len() > 0) {
			words = append(words, w.String())
		}
		w.Reset()
		inWord, quoted = false, false
	}
	for i := 0; i < len(line); i++ {
		switch c := line[i]; {
		case c == ' ' || c == '\t':
			end()
		case c == '#' && !inWord:
			end()
			return words, ""
		case c == ';' || c == '|' || c == '&' || c == '(' || c == ')':
			end()
			j := i + 1
			if j < len(line) && (line[j] == '|' || line[j] == '&') {
				j++
			}
			return words, line[j:]
		case c == '\'':
			inWord, quoted = true, true
			i = singleQuoted(line, i+1, &w)
		case c == '"':
			inWord, quoted = true, true
			i = doubleQuoted(line, i+1, vars, &w)
		case c == '\\' && i+1 < len(line):
			inWord, quoted = true, true
			i++
			w.WriteByte(line[i])
		case c == '$':
			inWord = true
			i = expansion(line, i, vars, &w)
		default:
			inWord = true
			w.WriteByte(c)
		}
	}
	end()
	return words, ""
}

// singleQuoted writes a '…' text starting at from as it is and returns the index of its closing
// quote.
func singleQuoted(line string, from int, w *strings.Builder) int {
	end := strings.IndexByte(line[from:], '\'')
	if end < 0 {
		w.WriteString(line[from:])
		return len(line)
	}
	w.WriteString(line[from : from+end])
	return from + end
}

// doubleQuoted writes the expansion of a "…" text starting at from and returns the index of its
// closing quote.
func doubleQuoted(line string, from int, vars map[string]string, w *strings.Builder) int {
	for i := from; i < len(line); i++ {
		switch c := line[i]; {
		case c == '"':
			return i
		case c == '\\' && i+1 < len(line) && strings.IndexByte("\"\\$`", line[i+1]) >= 0:
			i++
			w.WriteByte(line[i])
		case c == '$':
			i = expansion(line, i, vars, w)
		default:
			w.WriteByte(c)
		}
	}
	return len(line)
}

// expansion writes the value of the $… reference at line[at] and returns the index of its last
// character: $NAME, ${NAME}, ${NAME:-default} and ${NAME:=default} (which also assigns). A
// command substitution expands to nothing.
func expansion(line string, at int, vars map[string]string, w *strings.Builder) int {
	next := at + 1
	switch {
	case next >= len(line):
		w.WriteByte('$')
		return at
	case line[next] == '{':
		end := strings.IndexByte(line[next:], '}')
		if end < 0 {
			return len(line)
		}
		ref := line[next+1 : next+end]
		name, def, op := ref, "", ""
		for _, o := range []string{":-", ":="} {
			if n, d, ok := strings.Cut(ref, o); ok {
				name, def, op = n, d, o
				break
			}
		}
		value := vars[name]
		if value == "" && op != "" {
			value = def
			if op == ":=" {
				vars[name] = def
			}
		}
		w.WriteString(value)
		return next + end
	case line[next] == '(':
		depth := 0
		for i := next; i < len(line); i++ {
			switch line[i] {
			case '(':
				depth++
			case ')':
				if depth--; depth == 0 {
					return i
				}
			}
		}
		return len(line)
	}
	end := next
	for end < len(line) && isName(line[next:end+1]) {
		end++
	}
	if end == next {
		w.WriteByte('$')
		return at
	}
	w.WriteString(vars[line[next:end]])
	return end - 1
}
