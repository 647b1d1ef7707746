// Command kubectl is kubectl from the published k8s.io/kubectl module (the same main as
// k8s.io/kubernetes/cmd/kubectl), so the sandbox's next commands work on a machine with only Go.
package main

import (
	"k8s.io/component-base/cli"
	"k8s.io/kubectl/pkg/cmd"
	"k8s.io/kubectl/pkg/cmd/util"
)

func main() {
	command := cmd.NewDefaultKubectlCommand()
	if err := cli.RunNoErrOutput(command); err != nil {
		util.CheckErr(err)
	}
}
