package bootemu

import (
	"path"
	"regexp"
	"strings"

	"sigs.k8s.io/yaml"
)

// How a host's kube-vip announces the control-plane endpoint, read from what lands on the host:
// a static pod manifest in the kubelet's manifest folder, whatever its file name and whoever
// writes it (cloud-init's write_files, a script's heredoc, or the kube-vip image's own
// `manifest pod` command redirected there).
type vipMode string

const (
	vipNone vipMode = ""
	// vipBGP announces the address to Packet's routers: it reaches the host once the project has
	// BGP and the host a session.
	vipBGP vipMode = "bgp"
	// vipARP answers ARP for the address on the host's own segment, which Packet's layer-3
	// network does not route: the address still reaches only the device it is assigned to.
	vipARP vipMode = "arp"
)

// staticPodDir is where the kubelet reads static pods from (kubeadm's default).
const staticPodDir = "/etc/kubernetes/manifests"

// kubeVIPMode is how kube-vip runs on a host whose payload writes files and runs commands. The
// first kube-vip found decides: a host runs one.
func kubeVIPMode(files map[string]string, commands []string) vipMode {
	for p, content := range files {
		if inStaticPodDir(p) {
			if m := podKubeVIPMode(content); m != vipNone {
				return m
			}
		}
	}
	texts := commands
	for _, content := range files {
		if strings.HasPrefix(content, "#!") {
			texts = append(texts, content)
		}
	}
	for _, t := range texts {
		if m := shellKubeVIPMode(t); m != vipNone {
			return m
		}
	}
	return vipNone
}

func inStaticPodDir(p string) bool {
	return path.Dir(path.Clean(p)) == staticPodDir
}

// podKubeVIPMode reads a static pod manifest: a container of the kube-vip image decides the mode
// by its environment, as kube-vip's own configuration does (bgp_enable, else vip_arp).
func podKubeVIPMode(manifest string) vipMode {
	var pod struct {
		Kind string `json:"kind"`
		Spec struct {
			Containers []struct {
				Image string `json:"image"`
				Env   []struct {
					Name  string `json:"name"`
					Value string `json:"value"`
				} `json:"env"`
			} `json:"containers"`
		} `json:"spec"`
	}
	if yaml.Unmarshal([]byte(manifest), &pod) != nil || pod.Kind != "Pod" {
		return vipNone
	}
	for _, c := range pod.Spec.Containers {
		if !isKubeVIPImage(c.Image) {
			continue
		}
		env := map[string]string{}
		for _, e := range c.Env {
			env[e.Name] = e.Value
		}
		switch {
		case env["bgp_enable"] == "true":
			return vipBGP
		case env["vip_arp"] == "true":
			return vipARP
		}
	}
	return vipNone
}

// isKubeVIPImage is an image reference whose repository is kube-vip, on any registry and tag.
func isKubeVIPImage(ref string) bool {
	name, _, _ := strings.Cut(ref, "@")
	name = name[strings.LastIndex(name, "/")+1:]
	name, _, _ = strings.Cut(name, ":")
	return name == "kube-vip"
}

var (
	// manifestPodCommand is the kube-vip image's generator: `kube-vip manifest pod [flags]`.
	// The image or its binary comes first: `ctr run IMAGE vip /kube-vip manifest pod`, `docker
	// run IMAGE manifest pod`, `kube-vip manifest pod`.
	manifestPodCommand = regexp.MustCompile(`\bkube-vip\S*\s+(?:\S+\s+){0,2}?manifest\s+pod\b`)
	// redirect is a shell output redirection and its target.
	redirect = regexp.MustCompile(`(?:^|[^0-9&<>])>>?\s*("[^"]+"|'[^']+'|[^\s;&|)]+)`)
	// heredoc is the start of a here-document: its word, quoted or not.
	heredoc = regexp.MustCompile(`<<-?\s*(["']?)([A-Za-z_][A-Za-z0-9_]*)["']?`)
	// assignment is a shell variable set to a plain value (the only kind a target is resolved by).
	assignment = regexp.MustCompile(`(?m)^\s*(?:export\s+|local\s+|readonly\s+)?([A-Za-z_][A-Za-z0-9_]*)=("[^"$]*"|'[^']*'|[^\s;$"']+)\s*$`)
	// variable is a reference to one: $NAME, ${NAME}, or clusterctl's unrendered $${NAME}.
	variable = regexp.MustCompile(`\$?\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))`)
)

// shellKubeVIPMode reads a shell text (a runcmd line or a script) for a kube-vip static pod it
// writes: a here-document or the image's `manifest pod` output redirected into the manifest
// folder.
func shellKubeVIPMode(script string) vipMode {
	vars := map[string]string{}
	for _, m := range assignment.FindAllStringSubmatch(script, -1) {
		vars[m[1]] = strings.Trim(m[2], `"'`)
	}
	lines := logicalLines(script)
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		if !redirectsToStaticPodDir(line, vars) {
			continue
		}
		if m := heredoc.FindStringSubmatch(line); m != nil {
			body, end := heredocBody(lines[i+1:], m[2])
			i += end
			if m[1] == "" { // an unquoted word: the shell expands the body's variables
				body = expand(body, vars)
			}
			if mode := podKubeVIPMode(body); mode != vipNone {
				return mode
			}
			continue
		}
		if manifestPodCommand.MatchString(line) {
			return manifestPodFlagsMode(line)
		}
	}
	return vipNone
}

// manifestPodFlagsMode is the mode `kube-vip manifest pod` writes for its flags: --bgp, else --arp.
func manifestPodFlagsMode(command string) vipMode {
	flags := strings.Fields(command[manifestPodCommand.FindStringIndex(command)[1]:])
	has := func(name string) bool {
		for _, f := range flags {
			if f == name || f == name+"=true" {
				return true
			}
		}
		return false
	}
	switch {
	case has("--bgp"):
		return vipBGP
	case has("--arp"):
		return vipARP
	}
	return vipNone
}

// redirectsToStaticPodDir is whether a line sends output into the manifest folder, with plain
// variables in the target resolved.
func redirectsToStaticPodDir(line string, vars map[string]string) bool {
	for _, m := range redirect.FindAllStringSubmatch(line, -1) {
		if target := expand(strings.Trim(m[1], `"'`), vars); inStaticPodDir(target) {
			return true
		}
	}
	return false
}

// expand replaces variable references as the shell would; one this reading cannot know (set
// from a command's output at boot) expands to nothing.
func expand(text string, vars map[string]string) string {
	return variable.ReplaceAllStringFunc(text, func(ref string) string {
		sub := variable.FindStringSubmatch(ref)
		return vars[sub[1]+sub[2]]
	})
}

// logicalLines joins backslash-continued lines, as the shell reads them.
func logicalLines(script string) []string {
	var out []string
	var cur strings.Builder
	for _, l := range strings.Split(script, "\n") {
		if trimmed, ok := strings.CutSuffix(strings.TrimRight(l, " \t"), `\`); ok {
			cur.WriteString(trimmed + " ")
			continue
		}
		cur.WriteString(l)
		out = append(out, cur.String())
		cur.Reset()
	}
	return out
}

// heredocBody is a here-document's text up to its closing word, and how many lines it spans.
// Leading indentation is removed as far as the first line has it, since scripts inside YAML
// blocks keep theirs.
func heredocBody(lines []string, word string) (string, int) {
	var body []string
	for i, l := range lines {
		if strings.TrimSpace(l) == word {
			return dedent(body), i + 1
		}
		body = append(body, l)
	}
	return dedent(body), len(lines)
}

func dedent(lines []string) string {
	if len(lines) == 0 {
		return ""
	}
	indent := lines[0][:len(lines[0])-len(strings.TrimLeft(lines[0], " \t"))]
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = strings.TrimPrefix(l, indent)
	}
	return strings.Join(out, "\n")
}
