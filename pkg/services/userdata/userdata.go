// Package userdata turns a Machine's bootstrap data into the user-data of a Packet device.
//
// The previous Packet provider ran every bootstrap payload through Go's text/template with a few
// keys ({{ .kubernetesVersion }}, {{ .controlPlaneEndpoint }}, {{ .apiKey }}), and its templates
// escape cloud-init's own Jinja as {{ `{{ v1.instance_id }}` }}. Payloads written for it render
// here byte for byte as they did there. Everything else reaches Packet untouched: data without a
// template action, Ignition, and bootstrap data written for other providers that carries cloud-init
// Jinja such as {{ ds.meta_data.instance_id }} — cloud-init renders that on the device.
//
// A payload that mixes the two (a template key next to raw Jinja), or that names a key this
// package does not know, is refused with an error that quotes the expression at fault.
package userdata

import (
	"bytes"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"text/template"
	"text/template/parse"
)

// Bootstrap data formats, as the bootstrap Secret's "format" key names them.
const (
	FormatCloudConfig = "cloud-config"
	FormatIgnition    = "ignition"
)

// Values are the template keys the previous provider offered. They are exposed under the same
// names: {{ .kubernetesVersion }}, {{ .controlPlaneEndpoint }}, {{ .apiKey }}.
type Values struct {
	KubernetesVersion    string
	ControlPlaneEndpoint string
	// APIKey is only set when the PacketCluster opts in (spec.exposeAPIKeyInUserData).
	APIKey string
}

func (v Values) keys() map[string]string {
	return map[string]string{
		"kubernetesVersion":    v.KubernetesVersion,
		"controlPlaneEndpoint": v.ControlPlaneEndpoint,
		"apiKey":               v.APIKey,
	}
}

// knownKeys is how errors list the keys.
const knownKeys = ".kubernetesVersion, .controlPlaneEndpoint, .apiKey"

// goAction is an expression only Go's templates write: a field (.key), a raw string (the
// escaped Jinja form), or a control word. Jinja's start with a name ({{ ds.meta_data.x }}).
var goAction = regexp.MustCompile("\\{\\{-?\\s*(\\.|`|\"|\\$|(if|else|end|range|with|define|template|block)\\b)")

// jinjaExpression is a {{ ... }} expression that is not one of goAction's.
var jinjaExpression = regexp.MustCompile(`\{\{-?\s*[A-Za-z_][^{}]*\}\}`)

// Render returns the user-data for bootstrap data in format. Errors quote the expression at fault
// (never the data around it).
func Render(data []byte, format string, v Values) (string, error) {
	if format == FormatIgnition || !bytes.Contains(data, []byte("{{")) {
		return string(data), nil
	}
	if !goAction.Match(data) {
		// Only cloud-init Jinja (or stray braces): cloud-init renders it on the device.
		return string(data), nil
	}
	tmpl, err := template.New("bootstrap data").Option("missingkey=error").Parse(string(data))
	if err != nil {
		if jinja := jinjaExpression.Find(data); jinja != nil {
			return "", fmt.Errorf("bootstrap data mixes template keys (%s) with cloud-init Jinja %s: escape the Jinja as {{ `%s` }}, or drop the template keys",
				knownKeys, jinja, jinja)
		}
		return "", fmt.Errorf("bootstrap data is not a valid template: %w", err)
	}
	keys := v.keys()
	for _, f := range fields(tmpl.Root) {
		if _, ok := keys[f]; !ok {
			return "", fmt.Errorf("bootstrap data names the template key {{ .%s }}, which does not exist (known: %s)", f, knownKeys)
		}
	}
	var out strings.Builder
	if err := tmpl.Execute(&out, v.keys()); err != nil {
		return "", fmt.Errorf("rendering bootstrap data template: %w", err)
	}
	return out.String(), nil
}

// Names reports whether bootstrap data in format reads the template key (e.g. "apiKey"), so
// that a key left empty by design can be said to be empty rather than silently rendered so.
func Names(data []byte, format, key string) bool {
	if format == FormatIgnition || !goAction.Match(data) {
		return false
	}
	tmpl, err := template.New("bootstrap data").Parse(string(data))
	return err == nil && slices.Contains(fields(tmpl.Root), key)
}

// fields returns the .fields the template reads, in order.
func fields(n parse.Node) []string {
	var found []string
	var walk func(parse.Node)
	walk = func(n parse.Node) {
		if n == nil {
			return
		}
		switch n := n.(type) {
		case *parse.ListNode:
			if n == nil {
				return
			}
			for _, c := range n.Nodes {
				walk(c)
			}
		case *parse.ActionNode:
			walk(n.Pipe)
		case *parse.PipeNode:
			if n == nil {
				return
			}
			for _, c := range n.Cmds {
				walk(c)
			}
		case *parse.CommandNode:
			for _, a := range n.Args {
				walk(a)
			}
		case *parse.FieldNode:
			found = append(found, n.Ident[0])
		case *parse.IfNode:
			walk(n.Pipe)
			walk(n.List)
			walk(n.ElseList)
		case *parse.RangeNode:
			walk(n.Pipe)
			walk(n.List)
			walk(n.ElseList)
		case *parse.WithNode:
			walk(n.Pipe)
			walk(n.List)
			walk(n.ElseList)
		}
	}
	walk(n)
	return found
}
