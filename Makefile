# fiomig — quick start: `make run` (the main job on the embedded simulator,
# writing a report) and `make test` (all tests). `make` alone prints help.

GO          ?= go
OUT         ?= out
RUN_FLAGS   ?=
BIN         := bin/fiomig
# fiomig --version: the checkout's git description (go's own VCS stamp is
# off when GOFLAGS has -buildvcs=false).
VERSION     ?= $(shell git describe --always --dirty 2>/dev/null || echo devel)
FUZZTIME    ?= 60s
# Debian packages the tests need: fio (real workloads), nvme-cli (cross-check
# of `nvme list-subsys` against our parser), fuse3 (fio through FUSE volumes),
# chromium (report.html opened in headless Chromium by reports' browser test),
# iproute2 (`ip`: the kube stand-in's network namespace for pod IPs).
TOOLS_PKGS  := fio nvme-cli fuse3 chromium iproute2
# Real etcd + kube-apiserver for the kube backend's tests, built once from the
# Go module proxy (internal/kubetest/build-bins.sh) and cached here.
KUBE_CACHE  := .cache/kube
# The packages make test runs under the race detector (the others run without
# it): those whose code starts goroutines or shares state under a lock, and
# whose race run is cheap. Measured on 2 cores at load 10-20, CPU seconds of
# the test run, plain -> race: sim 3.1 -> 9.4, backend/sim 1.5 -> 5.2,
# reports 3.6 -> 18.5, workload 1.7 -> 3.0; building them and their
# dependencies for the race detector from a cold cache takes 77 s CPU:
# about 100 s CPU in all on a fresh machine. Left out: cmd/fiomig (its
# goroutines — sweep's pool, signals — are worth it, but its race run had not
# finished after 565 s wall where the plain one takes 127 s, 33 s CPU),
# scenario (34.8 -> over 148 s CPU, no goroutine of its own),
# internal/standin and backend/kube (a real kube-apiserver; client-go built a
# second time), and packages with no goroutine, where the detector has
# nothing to find (faults 1.8 -> 10.5; checks, nvmeof, fio, record, ...).
RACE_PKGS   := ./sim/ ./backend/sim/ ./reports/ ./workload/
# Container images (make images): OCI layouts and archives, and images.json
# naming each by digest; Debian package files are kept in .cache/debs.
IMAGES      ?= bin/images
PUSH        ?=
# A real node's runtime for internal/kubenode (make node-tools): Debian's
# containerd, runc, CNI plugins, and nftables for the nft helper's image.
NODE_PKGS   := containerd runc containernetworking-plugins nftables
# make test's suites package runs the kube suite on real kubelets too
# (label node: ~8 min at load 10-20, waiting for the machine's one cluster
# when another test holds it), hence its 35 min test timeout.
# staticcheck for make lint: honnef.co/go/tools, pinned (go install from the
# Go module proxy into .cache/tools/staticcheck-VERSION/ once).
STATICCHECK_VERSION := v0.8.2
STATICCHECK := .cache/tools/staticcheck-$(STATICCHECK_VERSION)/staticcheck

# bash for make test's pipeline exit status (PIPESTATUS).
SHELL       := bash
.DEFAULT_GOAL := help
.PHONY: help run reproduce test bench lint fuzz tools kube-bins kube-node-bins node-tools images e2e-node kind-up build clean

help: ## print this help
	@echo "fiomig — a test-and-chaos harness for live migrations of NVMe-oF volumes"
	@echo
	@echo "Quick start:  make run    then    make test"
	@echo
	@grep -E '^[a-z0-9-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-15s %s\n", $$1, $$2}'
	@echo
	@echo "Variables: RUN_FLAGS='--seed 7 --cutover-pause 7' (passed to fiomig run), OUT=$(OUT), FUZZTIME=$(FUZZTIME)"

build: ## build bin/fiomig and bin/fiomig-host (the host tools alone: hosts, inspect, release, reap; starts like nvme-cli)
	$(GO) build -ldflags "-X main.version=$(VERSION)" -o $(BIN) ./cmd/fiomig
	$(GO) build -ldflags "-X main.version=$(VERSION)" -o bin/fiomig-host ./cmd/fiomig-host

run: build ## the main job (fiomig run with no flag): 23 migrations on the embedded simulator, report under out/ (OUT)
	./$(BIN) run --out $(OUT) $(RUN_FLAGS)

reproduce: build ## reproduce incident fio-mig-1787159565 with both operators side by side
	./$(BIN) reproduce fio-mig-1787159565 --out $(OUT) $(RUN_FLAGS)

tools: ## install the Debian packages the tests need (fio, nvme-cli, fuse3, chromium, iproute2, postgresql for the history store's tests) when missing
	@missing=""; \
	command -v fio >/dev/null 2>&1 || missing="$$missing fio"; \
	command -v nvme >/dev/null 2>&1 || missing="$$missing nvme-cli"; \
	command -v fusermount3 >/dev/null 2>&1 || missing="$$missing fuse3"; \
	command -v chromium >/dev/null 2>&1 || missing="$$missing chromium"; \
	command -v ip >/dev/null 2>&1 || missing="$$missing iproute2"; \
	ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1 || missing="$$missing postgresql"; \
	if [ -z "$$missing" ]; then echo "tools: fio, nvme-cli, fuse3, chromium, iproute2 and postgresql are installed"; exit 0; fi; \
	if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
		echo "tools: installing$$missing"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	else \
		echo "tools: missing$$missing — install them (Debian: apt-get install$$missing); tests that need them will skip, or fail under FIOMIG_REQUIRE_TOOLS=1"; \
	fi

kube-bins: ## build etcd + kube-apiserver into .cache/kube/bin once (~6 min cold on 2 cores; then cached)
	@GO=$(GO) sh internal/kubetest/build-bins.sh $(KUBE_CACHE) || { \
		if [ "$$FIOMIG_REQUIRE_TOOLS" = 1 ]; then exit 1; fi; \
		echo "kube-bins: build failed; tests needing kube-apiserver will skip (FIOMIG_REQUIRE_TOOLS=1 makes this fatal)"; }

kube-node-bins: kube-bins ## build kubelet, kube-scheduler + kube-controller-manager into .cache/kube/bin once (~10 min on 2 cores after kube-bins; then cached)
	@GO=$(GO) sh internal/kubenode/build-node-bins.sh $(KUBE_CACHE) || { \
		if [ "$$FIOMIG_REQUIRE_TOOLS" = 1 ]; then exit 1; fi; \
		echo "kube-node-bins: build failed; tests needing a real node will skip (FIOMIG_REQUIRE_TOOLS=1 makes this fatal)"; }

node-tools: ## install Debian's containerd, runc, CNI plugins and nftables when missing (a real node for internal/kubenode)
	@missing=""; for p in $(NODE_PKGS); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -z "$$missing" ]; then echo "node-tools: $(NODE_PKGS) are installed"; exit 0; fi; \
	if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
		echo "node-tools: installing$$missing"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	else \
		echo "node-tools: missing$$missing — install them (Debian: apt-get install$$missing); tests that need them will skip, or fail under FIOMIG_REQUIRE_TOOLS=1"; \
	fi

e2e-node: tools node-tools kube-node-bins images ## real pods here: the internal/kubenode cluster tests and the kube suite on real kubelets (suites, label node; root)
	FIOMIG_REQUIRE_TOOLS=1 $(GO) test -count=1 -timeout 30m -v ./internal/kubenode/
	FIOMIG_REQUIRE_TOOLS=1 FIOMIG_JUNIT_DIR=$(abspath $(OUT))/junit $(GO) test -count=1 -timeout 40m -v ./suites/ -ginkgo.label-filter=node -ginkgo.v

images: ## build the fiomig, fio and pause images (OCI, reproducible, no registry) into bin/images (IMAGES); PUSH=registry/prefix also pushes them
	@mkdir -p $(IMAGES)
	CGO_ENABLED=0 $(GO) build -trimpath -buildvcs=false -ldflags "-s -w -X main.version=$(VERSION)" -o $(IMAGES)/fiomig-linux-amd64 ./cmd/fiomig
	$(GO) run ./cmd/mkimages --fiomig $(IMAGES)/fiomig-linux-amd64 --version $(VERSION) --out $(IMAGES) --debs .cache/debs $(if $(PUSH),--push $(PUSH))

test: tools kube-bins node-tools kube-node-bins images ## install missing tools, build kube-bins, kube-node-bins and images, then run go vet and every test, RACE_PKGS under the race detector (Ginkgo JUnit in out/junit/, output in out/test.log, OUT); a failure ends with each failed test's message
	$(GO) vet ./...
	@mkdir -p $(OUT); race="$$($(GO) list $(RACE_PKGS))" && rest="$$($(GO) list ./... | grep -vxF "$$race")" && \
	{ echo "$(GO) test -count=1 -timeout 35m <every package but RACE_PKGS>" && \
	  FIOMIG_JUNIT_DIR=$(abspath $(OUT))/junit $(GO) test -count=1 -timeout 35m $$rest && \
	  echo "$(GO) test -race -count=1 -timeout 20m $(RACE_PKGS)" && \
	  FIOMIG_JUNIT_DIR=$(abspath $(OUT))/junit $(GO) test -race -count=1 -timeout 20m $$race; } 2>&1 | tee $(OUT)/test.log; \
	rc=$${PIPESTATUS[0]}; [ "$$rc" = 0 ] || { \
	  echo; echo "make test: FAILED (exit $$rc). Each failure's lines, from $(OUT)/test.log (the whole output):"; \
	  grep -E -A14 '\[FAILED\]|^--- FAIL|^panic: |^FAIL' $(OUT)/test.log | cut -c1-400 | tail -n 200; }; exit $$rc

kind-up: ## create the kind cluster of kind-config/ and apply deploy/ (needs kind, docker and kubectl; no test needs it)
	@command -v kind >/dev/null 2>&1 || { echo "kind-up: kind is not installed (https://kind.sigs.k8s.io); nothing done"; exit 2; }
	kind create cluster --config kind-config/cluster.yaml
	kubectl apply -f deploy/crds/ -f deploy/rbac/ -f deploy/agent/

bench: ## run every benchmark once (figures go in the closing notes)
	$(GO) test -run '^$$' -bench . -benchmem -timeout 30m ./...

lint: $(STATICCHECK) ## gofmt, go vet, staticcheck (pinned, built once into .cache/tools) and go mod tidy -diff (go.mod's indirect marks)
	@unformatted=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$unformatted" ]; then echo "gofmt would change:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet ./...
	$(STATICCHECK) ./...
	$(GO) mod tidy -diff

# staticcheck with its default checks (no staticcheck.conf), built from the
# Go module proxy at a pinned version the first time make lint runs.
$(STATICCHECK):
	GOBIN=$(CURDIR)/$(@D) $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)

fuzz: ## run every fuzz target for FUZZTIME each (a duration, or a count like 3000x: CI uses 3000x, see .ci/run), one after another; the long run: FUZZTIME=10m
	@set -e; for d in $$(grep -l '^func Fuzz' $$(git ls-files '*_test.go') | xargs -n1 dirname | sort -u); do \
		for f in $$(grep -h -o '^func Fuzz[A-Za-z0-9_]*' $$d/*_test.go | cut -d' ' -f2); do \
			echo "fuzz ./$$d $$f for $(FUZZTIME)"; \
			$(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) ./$$d; \
		done; \
	done

clean: ## remove bin/ and the runs' directory (OUT, default out/)
	rm -rf bin $(OUT)
