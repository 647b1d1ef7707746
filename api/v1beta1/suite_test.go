package v1beta1_test

import (
	"context"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"sigs.k8s.io/cluster-api-provider-packet/test/helpers"
)

var (
	ctx     context.Context
	testEnv *helpers.TestEnvironment
)

func TestAPI(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "API types on a real kube-apiserver")
}

var _ = BeforeSuite(func() {
	ctx = context.Background()
	var err error
	testEnv, err = helpers.Start(ctx)
	Expect(err).NotTo(HaveOccurred())
	GinkgoLogr.Info("envtest started", "kube-apiserver", testEnv.ServerVersion, "etcd", testEnv.EtcdVersion)
	AddReportEntry("kube-apiserver", testEnv.ServerVersion)
	AddReportEntry("etcd", testEnv.EtcdVersion)
})

var _ = AfterSuite(func() {
	if testEnv != nil {
		Expect(testEnv.Stop()).To(Succeed())
	}
})
