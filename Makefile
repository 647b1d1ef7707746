# Cluster API infrastructure provider for Packet (Equinix Metal).
#
# Everything this Makefile needs is built from Go modules through the module proxy into ./bin,
# which git ignores: the envtest binaries (kube-apiserver, etcd), controller-gen, kustomize and
# golangci-lint. Only Go is required on the machine. Run `make help` for the targets.

SHELL := /usr/bin/env bash -o pipefail
.SHELLFLAGS := -ec
.DEFAULT_GOAL := help

ROOT := $(abspath .)
BIN := $(ROOT)/bin
TOOLS_BIN := $(BIN)/tools
export PATH := $(TOOLS_BIN):$(PATH)

# Versions. Cluster API v1.14.2 is built with controller-tools v0.21.0 and Kubernetes 1.36.
K8S_VERSION ?= 1.36.3
CONTROLLER_GEN_VER := v0.21.0
KUSTOMIZE_VER := v5.8.1
GOLANGCI_LINT_VER := v2.15.0

CONTROLLER_GEN := $(TOOLS_BIN)/controller-gen-$(CONTROLLER_GEN_VER)
# The Ginkgo CLI runs our e2e suite's specs on parallel processes; it matches the library in go.mod.
GINKGO_VER := $(shell go list -m -f '{{.Version}}' github.com/onsi/ginkgo/v2 2>/dev/null)
GINKGO := $(TOOLS_BIN)/ginkgo-$(GINKGO_VER)
KUSTOMIZE := $(TOOLS_BIN)/kustomize-$(KUSTOMIZE_VER)
GOLANGCI_LINT := $(TOOLS_BIN)/golangci-lint-$(GOLANGCI_LINT_VER)

# envtest binaries, built from source by hack/tools/k8s (see its go.mod for the etcd version).
ENVTEST_DIR := $(BIN)/k8s/$(K8S_VERSION)
KUBE_APISERVER := $(ENVTEST_DIR)/kube-apiserver
KUBE_CONTROLLER_MANAGER := $(ENVTEST_DIR)/kube-controller-manager
ETCD := $(ENVTEST_DIR)/etcd
export KUBEBUILDER_ASSETS := $(ENVTEST_DIR)
export ENVTEST_K8S_VERSION := $(K8S_VERSION)

VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X sigs.k8s.io/cluster-api-provider-packet/pkg/version.version=$(VERSION)

GO_TEST_FLAGS ?= -race
TEST_PKGS ?= ./...

##@ General

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*##"; printf "Usage: make <target>\n"} /^[a-zA-Z0-9_-]+:.*?##/ { printf "  \033[36m%-18s\033[0m %s\n", $$1, $$2 } /^##@/ { printf "\n\033[1m%s\033[0m\n", substr($$0, 5) }' $(MAKEFILE_LIST)

##@ Development

.PHONY: run
run: generate ## Run the manager against the cluster in $KUBECONFIG (Packet API from $PACKET_API_URL).
	ENABLE_WEBHOOKS=$${ENABLE_WEBHOOKS:-false} go run -ldflags "$(LDFLAGS)" . --health-addr=127.0.0.1:9440 --diagnostics-address=127.0.0.1:8443 --insecure-diagnostics

.PHONY: build
build: $(BIN)/manager ## Build the manager binary into bin/manager.

# The binaries and release files are file targets with their real inputs, so that a warm
# `make sandbox` or `make test-e2e` rebuilds nothing that is current.
MANAGER_SOURCES := main.go go.mod go.sum $(shell find api controllers pkg -name '*.go' -not -name '*_test.go')
TEST_INFRA_SOURCES := $(MANAGER_SOURCES) $(shell find test/infrastructure -type f -not -name '*_test.go')

# stamp writes $(1) to the file $@ only when its content differs: a target that depends on the
# stamp is rebuilt when a variable it uses (the version, the image) changes, and only then.
stamp = @mkdir -p $(dir $@); echo '$(1)' | cmp -s - $@ || echo '$(1)' > $@

.PHONY: FORCE
FORCE:

$(BIN)/.version: FORCE
	$(call stamp,$(VERSION))

$(BIN)/manager: $(MANAGER_SOURCES) $(BIN)/.version
	go build -ldflags "$(LDFLAGS)" -o $@ .

.PHONY: packetsim
packetsim: $(BIN)/packetsim ## Build the Packet API simulator, bin/packetsim (test/infrastructure/packetsim/README.md).

$(BIN)/packetsim: $(TEST_INFRA_SOURCES)
	go build -o $@ ./test/infrastructure/packetsim/cmd/packetsim

$(BIN)/sandbox: $(TEST_INFRA_SOURCES)
	go build -o $@ ./test/infrastructure/sandbox/cmd

.PHONY: generate
generate: generate-go-deepcopy generate-manifests generate-templates ## Regenerate deepcopy code, CRDs, RBAC and webhook manifests, cluster templates.

.PHONY: generate-go-deepcopy
generate-go-deepcopy: $(CONTROLLER_GEN)
	$(CONTROLLER_GEN) object paths=./api/...

.PHONY: generate-manifests
generate-manifests: $(CONTROLLER_GEN)
	rm -f config/crd/bases/*.yaml
	$(CONTROLLER_GEN) rbac:roleName=manager-role crd webhook \
		paths=./api/... paths=./controllers/... paths=./pkg/... \
		output:crd:artifacts:config=config/crd/bases \
		output:rbac:artifacts:config=config/rbac \
		output:webhook:artifacts:config=config/webhook

.PHONY: verify-gen
verify-gen: generate ## Regenerate and fail if any generated file differs from what is committed.
	@if [ -n "$$(git status --porcelain -- api config templates)" ]; then \
		git status --porcelain -- api config templates; git diff -- api config templates | head -100; \
		echo "Generated files are out of date: run 'make generate' and commit the result."; exit 1; \
	fi

.PHONY: lint
lint: $(GOLANGCI_LINT) ## Run golangci-lint with .golangci.yml.
	$(GOLANGCI_LINT) run ./...

.PHONY: lint-fix
lint-fix: $(GOLANGCI_LINT) ## Run golangci-lint and let it fix what it can (formatting, imports, misspellings).
	$(GOLANGCI_LINT) run --fix ./...

.PHONY: verify-modules
verify-modules: ## Fail if go.mod and go.sum of the module or of a tools module under hack/tools are not tidy.
	go mod tidy -diff
	@for m in hack/tools/*/; do echo "go mod tidy -diff ($$m)"; (cd $$m && go mod tidy -diff) || exit 1; done

.PHONY: verify
verify: verify-gen lint verify-modules ## What CI checks before the tests: generated files, lint, tidy modules.

##@ Testing

.PHONY: test
test: envtest-bins $(CLUSTERCTL) ## Unit and envtest suites (real kube-apiserver + etcd, the simulator over HTTP, clusterctl); see test-all.
	@echo "envtest binaries: $$($(KUBE_APISERVER) --version), $$($(ETCD) --version | head -n 1)"
	go test $(GO_TEST_FLAGS) $(TEST_PKGS)

.PHONY: test-cover
test-cover: envtest-bins $(CLUSTERCTL) ## make test with coverage of every package: out/coverage.out, and the total and per-function figures in out/coverage.txt.
	@mkdir -p $(ROOT)/out
	go test -coverpkg=./... -coverprofile=$(ROOT)/out/coverage.out $(TEST_PKGS)
	go tool cover -func=$(ROOT)/out/coverage.out > $(ROOT)/out/coverage.txt
	@tail -n 1 $(ROOT)/out/coverage.txt

# test-all runs in two lanes side by side once the sandbox's binaries are built, each about as
# long as the other: this provider's e2e suite (on E2E_PROCS sandboxes), the soak and tilt ci;
# make test, the fuzz corpora, the image, the migration from v0.9.0 and Cluster API's e2e suite.
# The e2e phases mostly wait on the simulator's clock. What only one lane needs (the image, Tilt,
# v0.9.0's manager) is built in it. hack/phase.sh times each phase and the CPU use during it, and
# prints the table at the end (docs/e2e.md); PHASES_KEEP=1 adds to a record begun by .ci/run.
.PHONY: test-all
test-all: ## Run every test: make test, the fuzz corpora, the image, the short chaos soak, tilt ci, the migration spec and both e2e suites (CI runs this).
	@[ -n "$(PHASES_KEEP)" ] || hack/phase.sh reset
	@hack/phase.sh run build $(MAKE) --no-print-directory sandbox-bins
	@$(MAKE) --no-print-directory -j2 -Otarget test-all-e2e-lane test-all-checks-lane; rc=$$?; hack/phase.sh report; exit $$rc

.PHONY: test-all-e2e-lane
test-all-e2e-lane:
	@hack/phase.sh run e2e-packet $(MAKE) --no-print-directory test-e2e-packet
	@hack/phase.sh run soak $(MAKE) --no-print-directory soak-ci
	@hack/phase.sh run tilt-ci $(MAKE) --no-print-directory tilt-ci

.PHONY: test-all-checks-lane
test-all-checks-lane:
	@hack/phase.sh run test $(MAKE) --no-print-directory test
	@hack/phase.sh run fuzz $(MAKE) --no-print-directory fuzz
	@hack/phase.sh run image $(MAKE) --no-print-directory test-image
	@hack/phase.sh run migration $(MAKE) --no-print-directory test-e2e-migration
	@hack/phase.sh run e2e-capi $(MAKE) --no-print-directory test-e2e-capi CAPI_GINKGO_FLAGS='-ginkgo.label-filter=ci $(CAPI_GINKGO_FLAGS)'

.PHONY: bench
bench: ## Run the Go benchmarks.
	go test -run '^$$' -bench . -benchmem ./...

SCALE_MACHINES ?= 10,100,1000
SCALE_PROVISIONING ?= 60s
SCALE_RATE ?= 10

.PHONY: bench-scale
bench-scale: envtest-bins build ## Provision and delete 10, 100 and 1000 machines against the simulator; print the cost table.
	go run ./test/scale bench --machines $(SCALE_MACHINES) --provisioning $(SCALE_PROVISIONING) --rate $(SCALE_RATE) --manager $(BIN)/manager

.PHONY: bench-fleet
bench-fleet: envtest-bins build ## One manager provisions and deletes FLEET_MACHINES (10000) machines in FLEET_CLUSTERS (10) clusters, a Packet project and key each.
	go run ./test/scale bench --machines $(or $(FLEET_MACHINES),10000) --clusters $(or $(FLEET_CLUSTERS),10) --provisioning $(SCALE_PROVISIONING) --rate $(SCALE_RATE) --manager $(BIN)/manager

.PHONY: bench-shards
bench-shards: envtest-bins build ## Two managers sharded with --watch-filter provision and delete SHARDS_MACHINES (2000) machines; fails if a machine is reconciled by both.
	go run ./test/scale shards --machines $(or $(SHARDS_MACHINES),2000) --shards 2 --provisioning $(SCALE_PROVISIONING) --rate $(SCALE_RATE) --manager $(BIN)/manager

.PHONY: bench-secrets
bench-secrets: envtest-bins build ## The manager's memory next to 5,000 unrelated 100 KiB Secrets (SECRETS_MANAGER to compare another build).
	go run ./test/scale secrets --secrets 5000 --secret-size 102400 --provisioning 10s --rate 50 --manager $(or $(SECRETS_MANAGER),$(BIN)/manager)

.PHONY: bench-shutdown
bench-shutdown: envtest-bins build ## SIGTERM a manager while 20 device creates wait 25 s each for Packet's answer; print how long it took to exit (SHUTDOWN_MANAGER to compare another build).
	go run ./test/scale shutdown --machines 20 --manager $(or $(SHUTDOWN_MANAGER),$(BIN)/manager)

.PHONY: soak
soak: envtest-bins $(KUBE_CONTROLLER_MANAGER) build ## 50 machines, Packet API faults, two leader-elected managers whose leader is SIGKILLed, a namespace deleted, for 5 minutes; fails on any duplicate, leak, slow takeover, panic or leaked secret.
	go run ./test/scale soak --machines $(or $(SOAK_MACHINES),50) --chaos $(or $(SOAK_CHAOS),5m) --provisioning 30s --rate 20 --manager $(BIN)/manager \
		--replicas $(or $(SOAK_REPLICAS),2) --kube-controller-manager $(KUBE_CONTROLLER_MANAGER)

.PHONY: soak-ci
soak-ci: ## The short soak CI runs: 10 machines, 90 s of chaos.
	$(MAKE) soak SOAK_MACHINES=10 SOAK_CHAOS=90s

FUZZ_TIME ?= 30s

.PHONY: fuzz
fuzz: ## Replay every fuzz target's seed corpus (testdata/fuzz) as a test; no fuzzing.
	go test -run '^Fuzz' ./...

.PHONY: fuzz-run
fuzz-run: ## Fuzz each target for FUZZ_TIME (e.g. make fuzz-run FUZZ_TIME=10m).
	@for pkg in $$(go list ./...); do \
		for target in $$(go test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
			echo "fuzzing $$pkg $$target for $(FUZZ_TIME)"; \
			go test -run '^$$' -fuzz "^$$target$$" -fuzztime $(FUZZ_TIME) $$pkg || exit 1; \
		done; \
	done

.PHONY: envtest-bins
envtest-bins: $(KUBE_APISERVER) $(ETCD) ## Build kube-apiserver and etcd for envtest (once per version).

# kube-apiserver from k8s.io/kubernetes with its staging modules replaced by the published
# v0.$(minor) modules; the version is stamped in so clients that check it see a real one.
K8S_LDFLAGS := -s -w -X k8s.io/component-base/version.gitVersion=v$(K8S_VERSION) \
	-X k8s.io/component-base/version.gitMajor=$(word 1,$(subst ., ,$(K8S_VERSION))) \
	-X k8s.io/component-base/version.gitMinor=$(word 2,$(subst ., ,$(K8S_VERSION)))

$(KUBE_APISERVER):
	@mkdir -p $(ENVTEST_DIR)
	@echo "Building kube-apiserver v$(K8S_VERSION) from source (first time only, a few minutes)"
	cd hack/tools/k8s && CGO_ENABLED=0 go build -trimpath -ldflags "$(K8S_LDFLAGS)" \
		-o $@.tmp k8s.io/kubernetes/cmd/kube-apiserver && mv $@.tmp $@

# The sandbox's namespace and garbage-collector controllers, from the same module.
.PHONY: kube-controller-manager
kube-controller-manager: $(KUBE_CONTROLLER_MANAGER) ## Build kube-controller-manager for the sandbox (once per version).

$(KUBE_CONTROLLER_MANAGER):
	@mkdir -p $(ENVTEST_DIR)
	@echo "Building kube-controller-manager v$(K8S_VERSION) from source (first time only, a few minutes)"
	cd hack/tools/k8s && CGO_ENABLED=0 go build -trimpath -ldflags "$(K8S_LDFLAGS)" \
		-o $@.tmp k8s.io/kubernetes/cmd/kube-controller-manager && mv $@.tmp $@

$(ETCD):
	@mkdir -p $(ENVTEST_DIR)
	@echo "Building etcd from source (first time only)"
	cd hack/tools/k8s && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o $@.tmp ./etcd && mv $@.tmp $@

##@ Sandbox and end-to-end tests

# The sandbox (`make sandbox`) and the e2e suite run a whole management plane as local processes:
# etcd + kube-apiserver (envtest-bins) + kube-controller-manager, the Packet API simulator, the Cluster API managers built
# from the sigs.k8s.io/cluster-api module (hack/tools/capi), and bin/manager; components are
# installed by clusterctl from local repositories. Everything is cached under bin/ and rebuilt only
# when missing (the provider's own binaries always, Go's build cache makes that quick).
CAPI_VERSION := v1.14.2
CAPI_DIR := $(BIN)/capi/$(CAPI_VERSION)
CAPI_MANAGERS := $(CAPI_DIR)/core-manager $(CAPI_DIR)/kubeadm-bootstrap-manager $(CAPI_DIR)/kubeadm-control-plane-manager
CAPI_REPOSITORY := $(CAPI_DIR)/repository
CAPI_REPOSITORY_STAMP := $(CAPI_REPOSITORY)/cluster-api/$(CAPI_VERSION)/core-components.yaml
# cert-manager's CRDs only (the version clusterctl v1.14.2 defaults to): the sandbox runs no pods,
# so clusterctl finds cert-manager's API and skips installing cert-manager.
CERT_MANAGER_VER := v1.21.1
CERT_MANAGER_CRDS := $(CAPI_DIR)/cert-manager-$(CERT_MANAGER_VER)-crds
KUBECTL := $(TOOLS_BIN)/kubectl-v$(K8S_VERSION)
SANDBOX_STATE ?= $(ROOT)/.sandbox
SANDBOX_FLAGS ?=
E2E_ARTIFACTS ?= $(ROOT)/_artifacts
E2E_TIMEOUT ?= 55m
# E2E_PROCS processes share out our suite's specs, each on a sandbox of its own (its ports, its
# elastic IPs, its artifacts): the specs mostly wait on the simulator's clock, so two run in
# about the time of one. GINKGO_FLAGS are the Ginkgo CLI's, e.g. --focus='Quick start'.
E2E_PROCS ?= 2
GINKGO_FLAGS ?=
CAPI_LDFLAGS := -s -w -X sigs.k8s.io/cluster-api/version.gitVersion=$(CAPI_VERSION) \
	-X sigs.k8s.io/cluster-api/version.gitMajor=$(word 1,$(subst ., ,$(CAPI_VERSION:v%=%))) \
	-X sigs.k8s.io/cluster-api/version.gitMinor=$(word 2,$(subst ., ,$(CAPI_VERSION:v%=%))) \
	-X sigs.k8s.io/cluster-api/version.gitTreeState=clean

.PHONY: sandbox
sandbox: sandbox-bins kubectl ## Run the local management plane on loopback until Ctrl-C (no Packet account, Docker or kind).
	$(BIN)/sandbox up --state-dir $(SANDBOX_STATE) --kubectl $(KUBECTL) \
		--provider-components $(CLUSTERCTL_REPO_DIR)/infrastructure-packet/$(RELEASE_TAG)/infrastructure-components.yaml \
		--capi-repository $(CAPI_REPOSITORY) --capi-version $(CAPI_VERSION) --cert-manager-crds $(CERT_MANAGER_CRDS) \
		--clusterctl $(CLUSTERCTL) $(SANDBOX_FLAGS)

.PHONY: sandbox-down
sandbox-down: ## Stop a sandbox started by `make sandbox` (Ctrl-C does the same).
	@if [ -x $(BIN)/sandbox ]; then $(BIN)/sandbox down --state-dir $(SANDBOX_STATE); \
	else go run ./test/infrastructure/sandbox/cmd down --state-dir $(SANDBOX_STATE); fi

E2E_ENV = PACKET_E2E=1 E2E_ARTIFACTS=$(E2E_ARTIFACTS) \
	SANDBOX_PROVIDER_COMPONENTS=$(CLUSTERCTL_REPO_DIR)/infrastructure-packet/$(RELEASE_TAG)/infrastructure-components.yaml
CAPI_E2E_TIMEOUT ?= 75m
CAPI_GINKGO_FLAGS ?=

.PHONY: test-e2e
test-e2e: sandbox-bins ## Run both e2e suites at once, each on its own sandbox: ours and Cluster API's specs labelled ci (CI runs this).
	$(MAKE) --no-print-directory -j2 -Otarget test-e2e-packet test-e2e-capi CAPI_GINKGO_FLAGS='-ginkgo.label-filter=ci $(CAPI_GINKGO_FLAGS)'

.PHONY: test-e2e-full
test-e2e-full: sandbox-bins ## Run both e2e suites at once with every Cluster API spec, labelled ci or not.
	$(MAKE) --no-print-directory -j2 -Otarget test-e2e-packet test-e2e-capi

.PHONY: test-e2e-packet
test-e2e-packet: sandbox-bins $(GINKGO) ## Run this provider's e2e suite (test/e2e) on E2E_PROCS sandboxes it starts; artifacts in _artifacts/.
	$(E2E_ENV) $(GINKGO) --procs=$(E2E_PROCS) --timeout=$(E2E_TIMEOUT) -v --label-filter='!migration' $(GINKGO_FLAGS) ./test/e2e

.PHONY: test-e2e-capi
test-e2e-capi: sandbox-bins | e2e-script-tools ## Run Cluster API's own e2e specs (test/e2e/capi), all unless CAPI_GINKGO_FLAGS filters, on a sandbox it starts; artifacts in _artifacts/capi/.
	$(E2E_ENV) go test ./test/e2e/capi -count=1 -timeout $(CAPI_E2E_TIMEOUT) -v -args -ginkgo.v $(CAPI_GINKGO_FLAGS)

# The migration e2e spec (test/e2e/migration_test.go, on a sandbox of its own) runs the previous Packet provider's last release,
# v0.9.0, unmodified: its manager built from its module (hack/tools/capp) and its components
# rendered from the module's config/default, as its release did. It creates clusters with it, then
# hands them over to this provider by the steps of docs/migration.md. The clusterctl repository
# holds both versions, so `clusterctl init --infrastructure packet:<version>` finds either.
PREVIOUS_CAPP_VERSION := v0.9.0
PREVIOUS_CAPP_DIR := $(BIN)/capp/$(PREVIOUS_CAPP_VERSION)
PREVIOUS_CAPP_MANAGER := $(PREVIOUS_CAPP_DIR)/manager
PREVIOUS_CAPP_COMPONENTS := $(PREVIOUS_CAPP_DIR)/repository/infrastructure-components.yaml
MIGRATION_REPO_DIR := $(ROOT)/out/migration-repo
MIGRATION_TIMEOUT ?= 30m
# Apart from the other suites' sandboxes, which test-all runs at the same time.
MIGRATION_PORT_BASE ?= 18800
MIGRATION_PUBLIC_IPV4 ?= 127.69.0.0/16

.PHONY: test-e2e-migration
test-e2e-migration: sandbox-bins migration-repo $(PREVIOUS_CAPP_MANAGER) $(KUBECTL) $(GINKGO) ## Hand clusters of the previous provider (v0.9.0) over to this one on a sandbox; artifacts in _artifacts/migration/.
	PACKET_E2E=1 E2E_ARTIFACTS=$(E2E_ARTIFACTS)/migration E2E_PORT_BASE=$(MIGRATION_PORT_BASE) E2E_PUBLIC_IPV4=$(MIGRATION_PUBLIC_IPV4) \
		PREVIOUS_CAPP_MANAGER=$(PREVIOUS_CAPP_MANAGER) PREVIOUS_CAPP_VERSION=$(PREVIOUS_CAPP_VERSION) \
		MIGRATION_REPOSITORY=$(MIGRATION_REPO_DIR) RELEASE_TAG=$(RELEASE_TAG) KUBECTL=$(KUBECTL) \
		$(GINKGO) --timeout=$(MIGRATION_TIMEOUT) -v --label-filter=migration $(GINKGO_FLAGS) ./test/e2e

.PHONY: migration-repo
migration-repo: clusterctl-repo $(PREVIOUS_CAPP_COMPONENTS) ## Write a clusterctl repository with the previous provider's v0.9.0 and this build (out/migration-repo).
	rm -rf $(MIGRATION_REPO_DIR) && mkdir -p $(MIGRATION_REPO_DIR)/infrastructure-packet
	cp -r $(CLUSTERCTL_REPO_DIR)/infrastructure-packet/$(RELEASE_TAG) $(MIGRATION_REPO_DIR)/infrastructure-packet/
	cp -r $(PREVIOUS_CAPP_DIR)/repository $(MIGRATION_REPO_DIR)/infrastructure-packet/$(PREVIOUS_CAPP_VERSION)

$(PREVIOUS_CAPP_MANAGER):
	@mkdir -p $(@D)
	@echo "Building the previous provider's $(PREVIOUS_CAPP_VERSION) manager (first time only)"
	cd hack/tools/capp && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w \
		-X sigs.k8s.io/cluster-api-provider-packet/version.gitVersion=$(PREVIOUS_CAPP_VERSION) \
		-X k8s.io/component-base/version.gitVersion=$(PREVIOUS_CAPP_VERSION)" \
		-o $@.tmp sigs.k8s.io/cluster-api-provider-packet && mv $@.tmp $@

# Its components, metadata and templates, with the image named as its release named it (the
# sandbox runs no pods). Its kustomizations use fields kustomize v5 warns about; they still build.
$(PREVIOUS_CAPP_COMPONENTS): $(KUSTOMIZE)
	@mkdir -p $(@D)
	@dir=$$(cd hack/tools/capp && go mod download sigs.k8s.io/cluster-api-provider-packet && go list -m -f '{{.Dir}}' sigs.k8s.io/cluster-api-provider-packet); \
	cp $$dir/metadata.yaml $$dir/templates/cluster-template*.yaml $(@D)/ && chmod u+w $(@D)/* && \
	echo "$(KUSTOMIZE) build $$dir/config/default > $@" && \
	$(KUSTOMIZE) build $$dir/config/default > $@.tmp && \
	sed -i 's#cluster-api-provider-packet:dev$$#cluster-api-provider-packet:$(PREVIOUS_CAPP_VERSION)#' $@.tmp && mv $@.tmp $@

##@ Tilt (the sandbox loop, no container engine: Tiltfile, docs/tilt.md)

TILT_VER := v0.33.21
TILT := $(TOOLS_BIN)/tilt-$(TILT_VER)
TILT_SANDBOX_STATE ?= $(ROOT)/.tilt-sandbox
TILT_CI_TIMEOUT ?= 20m

.PHONY: tilt
tilt: $(TILT) sandbox-bins kubectl ## tilt up on the sandbox: the manager rebuilt and restarted on every change (UI on :10350).
	TILT_DISABLE_ANALYTICS=1 TILT_SANDBOX_STATE=$(TILT_SANDBOX_STATE) $(TILT) up

.PHONY: tilt-ci
tilt-ci: $(TILT) sandbox-bins kubectl ## tilt ci on a fresh sandbox: every resource healthy and the quick start's cluster Available.
	rm -rf $(ROOT)/.tilt-sandbox-ci
	TILT_DISABLE_ANALYTICS=1 TILT_SANDBOX_STATE=$(ROOT)/.tilt-sandbox-ci TILT_SANDBOX_PORT_BASE=16800 $(TILT) ci --port 0 --web-mode prod --timeout $(TILT_CI_TIMEOUT)

# Tilt's module has replace directives, so `go install` refuses it: it is built inside a copy of
# the module with -mod=mod. The module ships without the web UI's built assets, which the binary
# embeds; a placeholder page stands in (the CLI, the API and `tilt ci` need no UI). It needs cgo
# (tree-sitter parses Tiltfiles): gcc, which Go builds on Debian have.
$(TILT):
	@echo "Building Tilt $(TILT_VER) from the module proxy (first time only, a few minutes)"
	@mkdir -p $(TOOLS_BIN)
	rm -rf $(BIN)/tilt-src
	cp -r "$$(cd /tmp && go mod download -json github.com/tilt-dev/tilt@$(TILT_VER) | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$$/\1/p')" $(BIN)/tilt-src
	chmod -R u+w $(BIN)/tilt-src
	printf '<!doctype html><title>Tilt</title><p>Built without the web UI: use the tilt CLI (tilt get, tilt logs).\n' \
		> $(BIN)/tilt-src/pkg/assets/build/index.html
	cd $(BIN)/tilt-src && GOFLAGS=-mod=mod go build -ldflags "-s -w" -o $@.tmp ./cmd/tilt
	mv $@.tmp $@
	rm -rf $(BIN)/tilt-src

.PHONY: sandbox-bins
sandbox-bins: envtest-bins $(KUBE_CONTROLLER_MANAGER) capi-managers capi-repository clusterctl clusterctl-repo build $(BIN)/packetsim $(BIN)/sandbox ## Build everything the sandbox and the e2e suite run.

.PHONY: capi-managers
capi-managers: $(CAPI_MANAGERS) ## Build the Cluster API $(CAPI_VERSION) core, kubeadm bootstrap and control-plane managers.

$(CAPI_DIR)/core-manager: CAPI_PKG := sigs.k8s.io/cluster-api/core
$(CAPI_DIR)/kubeadm-bootstrap-manager: CAPI_PKG := sigs.k8s.io/cluster-api/bootstrap/kubeadm
$(CAPI_DIR)/kubeadm-control-plane-manager: CAPI_PKG := sigs.k8s.io/cluster-api/controlplane/kubeadm
$(CAPI_MANAGERS):
	@mkdir -p $(@D)
	@echo "Building $(CAPI_PKG) $(CAPI_VERSION) (first time only)"
	cd hack/tools/capi && CGO_ENABLED=0 go build -trimpath -ldflags "$(CAPI_LDFLAGS)" -o $@.tmp $(CAPI_PKG) && mv $@.tmp $@

.PHONY: capi-repository
capi-repository: $(CAPI_REPOSITORY_STAMP) $(CERT_MANAGER_CRDS) ## Render Cluster API's components into a local clusterctl repository.

# Cluster API's release components, rendered from the module's config/default folders as its own
# `make release-manifests` does, with the release images, plus metadata.yaml from the module root.
$(CAPI_REPOSITORY_STAMP): $(KUSTOMIZE)
	rm -rf $(CAPI_REPOSITORY) && mkdir -p $(CAPI_REPOSITORY)
	@capi=$$(cd hack/tools/capi && go mod download sigs.k8s.io/cluster-api && go list -m -f '{{.Dir}}' sigs.k8s.io/cluster-api); \
	for c in cluster-api:core-components:core:cluster-api-controller \
		bootstrap-kubeadm:bootstrap-components:bootstrap/kubeadm:kubeadm-bootstrap-controller \
		control-plane-kubeadm:control-plane-components:controlplane/kubeadm:kubeadm-control-plane-controller; do \
		IFS=: read -r label file src image <<< "$$c"; \
		out=$(CAPI_REPOSITORY)/$$label/$(CAPI_VERSION); k=$(CAPI_REPOSITORY)/.kustomize/$$label; mkdir -p $$out $$k; \
		printf 'apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- %s\nimages:\n- name: gcr.io/k8s-staging-cluster-api/%s\n  newName: registry.k8s.io/cluster-api/%s\n  newTag: %s\n' \
			"$$(realpath --relative-to=$$k $$capi/$$src/config/default)" "$$image" "$$image" "$(CAPI_VERSION)" > $$k/kustomization.yaml; \
		echo "$(KUSTOMIZE) build $$capi/$$src/config/default > $$out/$$file.yaml"; \
		$(KUSTOMIZE) build $$k > $$out/$$file.yaml.tmp && mv $$out/$$file.yaml.tmp $$out/$$file.yaml; \
		cp $$capi/metadata.yaml $$out/metadata.yaml; \
	done; rm -rf $(CAPI_REPOSITORY)/.kustomize
	@test -s $@

$(CERT_MANAGER_CRDS):
	@dir=$$(cd / && GOFLAGS= go mod download -json github.com/cert-manager/cert-manager@$(CERT_MANAGER_VER) | sed -n 's/^\t"Dir": "\(.*\)",$$/\1/p'); \
	test -d "$$dir/deploy/crds" && rm -rf $@.tmp && mkdir -p $@.tmp && cp $$dir/deploy/crds/*.yaml $@.tmp/ && mv $@.tmp $@
	@echo "cert-manager $(CERT_MANAGER_VER) CRDs in $@"

.PHONY: kubectl
kubectl: $(KUBECTL) ## Build kubectl v$(K8S_VERSION) from the k8s.io/kubectl module (for the sandbox's next commands).

$(KUBECTL):
	@mkdir -p $(TOOLS_BIN)
	cd hack/tools/capi && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w \
		-X k8s.io/component-base/version.gitVersion=v$(K8S_VERSION) \
		-X k8s.io/component-base/version.gitMajor=$(word 1,$(subst ., ,$(K8S_VERSION))) \
		-X k8s.io/component-base/version.gitMinor=$(word 2,$(subst ., ,$(K8S_VERSION)))" \
		-o $@.tmp ./kubectl && mv $@.tmp $@

##@ Tools

$(GINKGO):
	GOBIN=$(TOOLS_BIN) go install github.com/onsi/ginkgo/v2/ginkgo@$(GINKGO_VER)
	mv $(TOOLS_BIN)/ginkgo $@

$(CONTROLLER_GEN):
	GOBIN=$(TOOLS_BIN) go install sigs.k8s.io/controller-tools/cmd/controller-gen@$(CONTROLLER_GEN_VER)
	mv $(TOOLS_BIN)/controller-gen $@

$(KUSTOMIZE):
	GOBIN=$(TOOLS_BIN) go install sigs.k8s.io/kustomize/kustomize/v5@$(KUSTOMIZE_VER)
	mv $(TOOLS_BIN)/kustomize $@

$(GOLANGCI_LINT):
	GOBIN=$(TOOLS_BIN) go install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VER)
	mv $(TOOLS_BIN)/golangci-lint $@

##@ Cluster templates, release, clusterctl and image

CLUSTERCTL_VER := v1.14.2
CLUSTERCTL := $(TOOLS_BIN)/clusterctl-$(CLUSTERCTL_VER)

# The release version is the folder name in the clusterctl repository and must be in a release
# series of metadata.yaml; the image is the manager's.
RELEASE_TAG ?= $(shell git describe --tags --exact-match --match 'v*' 2>/dev/null || echo v0.1.0)
REGISTRY ?= quay.io/equinix-oss
IMAGE_NAME ?= cluster-api-provider-packet
IMAGE_TAG ?= $(RELEASE_TAG)
IMG ?= $(REGISTRY)/$(IMAGE_NAME):$(IMAGE_TAG)
# The image name config/default gives the manager; release-manifests replaces it with $(IMG).
DEFAULT_IMAGE := quay.io/equinix-oss/cluster-api-provider-packet
RELEASE_DIR ?= $(ROOT)/out/release
CLUSTERCTL_REPO_DIR ?= $(ROOT)/out/clusterctl-repo
# The binary in the image reports the tag it is published under.
IMAGE_DIR ?= $(ROOT)/out/image
IMAGE_ARCHIVE := $(IMAGE_DIR)/$(IMAGE_NAME)-$(IMAGE_TAG).oci.tar
IMAGE_LDFLAGS := -s -w -X sigs.k8s.io/cluster-api-provider-packet/pkg/version.version=$(IMAGE_TAG)
IMAGE_DESCRIPTION := Cluster API infrastructure provider for Packet (Equinix Metal)
RELEASE_IMAGE_ARCHIVE := $(RELEASE_DIR)/$(notdir $(IMAGE_ARCHIVE))
TEMPLATE_FLAVORS := default kube-vip crs-cni kube-vip-crs-cni topology flatcar spot-workers private-network emlb remediation raid
# Flavours only Cluster API's e2e specs use (test/e2e/capi adds them to its clusterctl repository).
TEST_TEMPLATE_FLAVORS := md-remediation kcp-remediation kcp-md-taints

# kustomize writes "${SPOT_PRICE_MAX:=0.50}" unquoted, and clusterctl's 0.50 would then be a YAML
# float, which a Quantity field refuses: quote the variables that stand for quantities.
QUOTE_QUANTITY_VARIABLES := sed -E 's/^( +spotPriceMax: )(\$$\{[A-Z_]+(:=[^}]*)?\})$$/\1"\2"/'

.PHONY: generate-templates
generate-templates: $(KUSTOMIZE) ## Build templates/cluster-template*.yaml from templates/flavors (kustomize).
	@for flavor in $(TEMPLATE_FLAVORS); do \
		out=templates/cluster-template-$$flavor.yaml; \
		if [ $$flavor = default ]; then out=templates/cluster-template.yaml; fi; \
		{ echo "# Generated from templates/flavors/$$flavor by 'make generate-templates'; do not edit."; \
		  $(KUSTOMIZE) build templates/flavors/$$flavor | $(QUOTE_QUANTITY_VARIABLES); } > $$out.tmp && mv $$out.tmp $$out; \
	done
	@for flavor in $(TEST_TEMPLATE_FLAVORS); do \
		out=templates/test/cluster-template-$$flavor.yaml; \
		{ echo "# Generated from templates/test/flavors/$$flavor by 'make generate-templates'; do not edit. Not released."; \
		  $(KUSTOMIZE) build templates/test/flavors/$$flavor; } > $$out.tmp && mv $$out.tmp $$out; \
	done

RELEASE_COMPONENTS = $(RELEASE_DIR)/infrastructure-components.yaml
RELEASE_INPUTS := metadata.yaml $(shell find config -type f) $(wildcard templates/cluster-template*.yaml templates/clusterclass-*.yaml)

.PHONY: release
release: $(RELEASE_COMPONENTS) $(RELEASE_IMAGE_ARCHIVE) ## Write the clusterctl release artifacts and the image archive into out/release (image: REGISTRY, IMAGE_NAME, IMAGE_TAG).

$(RELEASE_DIR).stamp: FORCE
	$(call stamp,$(IMG) $(RELEASE_TAG))

$(RELEASE_COMPONENTS): $(KUSTOMIZE) $(RELEASE_INPUTS) $(RELEASE_DIR).stamp
	rm -rf $(RELEASE_DIR) && mkdir -p $(RELEASE_DIR)/.kustomize
	printf 'apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- %s\nimages:\n- name: %s\n  newName: %s\n  newTag: %s\n' \
		"$$(realpath --relative-to=$(RELEASE_DIR)/.kustomize $(ROOT)/config/default)" \
		"$(DEFAULT_IMAGE)" "$(REGISTRY)/$(IMAGE_NAME)" "$(IMAGE_TAG)" \
		> $(RELEASE_DIR)/.kustomize/kustomization.yaml
	$(KUSTOMIZE) build $(RELEASE_DIR)/.kustomize > $(RELEASE_DIR)/infrastructure-components.yaml
	rm -rf $(RELEASE_DIR)/.kustomize
	cp metadata.yaml templates/cluster-template*.yaml templates/clusterclass-*.yaml $(RELEASE_DIR)/
	@echo "Release $(RELEASE_TAG) with image $(IMG) in $(RELEASE_DIR):"; ls $(RELEASE_DIR)

.PHONY: clusterctl-repo
clusterctl-repo: $(CLUSTERCTL_REPO_DIR)/clusterctl.yaml ## Write a local clusterctl repository and a clusterctl.yaml that registers it (out/clusterctl-repo).

$(CLUSTERCTL_REPO_DIR)/clusterctl.yaml: $(RELEASE_COMPONENTS)
	rm -rf $(CLUSTERCTL_REPO_DIR) && mkdir -p $(CLUSTERCTL_REPO_DIR)/infrastructure-packet/$(RELEASE_TAG)
	cp $(RELEASE_DIR)/* $(CLUSTERCTL_REPO_DIR)/infrastructure-packet/$(RELEASE_TAG)/
	printf '# Registers the local Packet provider repository: clusterctl init --infrastructure packet --config %s\nproviders:\n- name: packet\n  type: InfrastructureProvider\n  url: file://%s\n' \
		"$(CLUSTERCTL_REPO_DIR)/clusterctl.yaml" \
		"$(CLUSTERCTL_REPO_DIR)/infrastructure-packet/$(RELEASE_TAG)/infrastructure-components.yaml" \
		> $(CLUSTERCTL_REPO_DIR)/clusterctl.yaml
	@echo "clusterctl init --infrastructure packet --config $(CLUSTERCTL_REPO_DIR)/clusterctl.yaml"

.PHONY: clusterctl
clusterctl: $(CLUSTERCTL) ## Build clusterctl $(CLUSTERCTL_VER) from the Cluster API module into bin/tools.

# `go install sigs.k8s.io/cluster-api/cmd/clusterctl@v1.14.2` cannot work (Cluster API's go.mod
# replaces its api module), so hack/tools/clusterctl requires both modules at the same version.
# The version is stamped in: clusterctl compares it with the providers' contracts.
$(CLUSTERCTL):
	@mkdir -p $(TOOLS_BIN)
	cd hack/tools/clusterctl && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w \
		-X sigs.k8s.io/cluster-api/version.gitVersion=$(CLUSTERCTL_VER) \
		-X sigs.k8s.io/cluster-api/version.gitMajor=$(word 1,$(subst ., ,$(CLUSTERCTL_VER:v%=%))) \
		-X sigs.k8s.io/cluster-api/version.gitMinor=$(word 2,$(subst ., ,$(CLUSTERCTL_VER:v%=%)))" \
		-o $@.tmp sigs.k8s.io/cluster-api/cmd/clusterctl && mv $@.tmp $@

# The images are built without a daemon or a registry pull (hack/image/build.sh): buildah, from
# Debian's packages, puts the static binary, a CA bundle and the non-root user 65532 on scratch.
.PHONY: image
image: $(IMAGE_ARCHIVE) ## Build the manager image $(IMG) with buildah (no daemon) as an OCI archive in out/image.

$(IMAGE_DIR).stamp: FORCE
	$(call stamp,$(IMG) $(shell git rev-parse HEAD 2>/dev/null))

$(IMAGE_ARCHIVE): $(MANAGER_SOURCES) hack/image/build.sh $(IMAGE_DIR).stamp | buildah
	@mkdir -p $(IMAGE_DIR)
	CGO_ENABLED=0 go build -trimpath -ldflags "$(IMAGE_LDFLAGS)" -o $(IMAGE_DIR)/manager .
	hack/image/build.sh $(IMAGE_DIR)/manager /manager $(IMG) $(IMAGE_TAG) $@ "$(IMAGE_DESCRIPTION)"

# `make release` puts the image beside the manifests that name it; the components rule empties
# the folder, so the archive is copied after it.
$(RELEASE_IMAGE_ARCHIVE): $(IMAGE_ARCHIVE) | $(RELEASE_COMPONENTS)
	cp $< $@

.PHONY: test-image
test-image: $(IMAGE_ARCHIVE) $(RELEASE_COMPONENTS) ## Inspect the built image: entrypoint, user, labels, files, size, and run its binary.
	IMAGE_ARCHIVE=$(IMAGE_ARCHIVE) IMAGE_REF=$(IMG) IMAGE_VERSION=$(IMAGE_TAG) RELEASE_COMPONENTS=$(RELEASE_COMPONENTS) \
	go test ./test/image -count=1 -v

# The simulator image for Cluster API's Tilt loop (test/infrastructure/packetsim/config/tilt.yaml).
PACKETSIM_IMG ?= quay.io/equinix-oss/cluster-api-provider-packet-sim:dev
PACKETSIM_IMAGE_ARCHIVE := $(IMAGE_DIR)/cluster-api-provider-packet-sim.oci.tar

.PHONY: image-packetsim
image-packetsim: $(PACKETSIM_IMAGE_ARCHIVE) ## Build the simulator image $(PACKETSIM_IMG) with buildah for the Tilt loop.

$(PACKETSIM_IMAGE_ARCHIVE): $(TEST_INFRA_SOURCES) hack/image/build.sh | buildah
	@mkdir -p $(IMAGE_DIR)
	CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o $(IMAGE_DIR)/packetsim ./test/infrastructure/packetsim/cmd/packetsim
	hack/image/build.sh $(IMAGE_DIR)/packetsim /packetsim $(PACKETSIM_IMG) dev $@ "Packet API simulator for developing cluster-api-provider-packet"

# buildah and the CA bundle come from Debian's packages; as root (CI) they are installed here.
.PHONY: buildah
buildah:
	@if ! command -v buildah >/dev/null || [ ! -f /etc/ssl/certs/ca-certificates.crt ]; then \
		if [ "$$(id -u)" != 0 ]; then echo "install buildah and ca-certificates (Debian: apt-get install buildah ca-certificates)"; exit 1; fi; \
		echo "Installing buildah and ca-certificates from Debian's packages"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends buildah ca-certificates >/dev/null; \
	fi

# The KCP remediation spec's /wait-signal.sh, which the boot emulation runs, calls curl and jq;
# they come from Debian's packages, installed here as root (CI).
.PHONY: e2e-script-tools
e2e-script-tools:
	@if ! command -v curl >/dev/null || ! command -v jq >/dev/null; then \
		if [ "$$(id -u)" != 0 ]; then echo "install curl and jq (Debian: apt-get install curl jq)"; exit 1; fi; \
		echo "Installing curl and jq from Debian's packages"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends curl jq >/dev/null; \
	fi

.PHONY: docker-build
docker-build: ## Build the manager image $(IMG) with Docker (needs a Docker daemon).
	docker build --build-arg VERSION=$(IMAGE_TAG) --build-arg REVISION=$$(git rev-parse HEAD) -t $(IMG) .

.PHONY: docker-push
docker-push: ## Push the manager image $(IMG).
	docker push $(IMG)

.PHONY: docker-build-packetsim
docker-build-packetsim: ## Build the Packet API simulator image $(PACKETSIM_IMG) for Tilt (needs a Docker daemon).
	docker build --target packetsim -t $(PACKETSIM_IMG) .

.PHONY: clean
clean: ## Remove built tools and binaries (the envtest binaries take minutes to rebuild).
	rm -rf $(BIN) out
