# The two commands of the README: `make demo` and `make test`. Both install
# the Debian packages they need first (idempotent, quiet when present).

SHELL := /bin/bash
.DEFAULT_GOAL := test

# Build-time libraries, and the real peers and servers the tests run.
APT_BUILD := libsrtp2-dev libx264-dev libopus-dev libyuv-dev libxcb1-dev libxcb-shm0-dev \
	libxcb-xfixes0-dev libxcb-damage0-dev libxcb-randr0-dev libxcb-xinput-dev libxcb-xtest0-dev \
	libavcodec-dev libavformat-dev libavutil-dev libpulse-dev libssl-dev libpipewire-0.3-dev libdbus-1-dev
APT_RUNTIME := xvfb x11-utils ffmpeg pulseaudio gstreamer1.0-tools gstreamer1.0-plugins-base \
	gstreamer1.0-plugins-good gstreamer1.0-plugins-bad gstreamer1.0-plugins-ugly gstreamer1.0-libav \
	janus tcpdump chromium-headless-shell x11-xserver-utils xserver-xephyr libxtst6 \
	mutter pipewire wireplumber pipewire-pulse xwayland dbus-daemon libglib2.0-bin python3-dbus gstreamer1.0-pipewire \
	xdg-desktop-portal xdg-desktop-portal-gnome
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
SWIFT_FLAGS ?=
# `make test TEST_FILTER="--filter NetworkTests"` runs some of the tests.
TEST_FILTER ?=
FUZZ_SECONDS ?= 60
FUZZ_TARGETS := rtp rtcp h264 srtp fec congestion handshake sdp session control opus cursor knownpeers http

DOCS_DIR ?= .build/docs
# The per-stage benchmarks step `share scene` (tooling, not a library they can link).
BENCH_ENV = SHARE_BIN="$$(cd .. && swift build --show-bin-path $(SWIFT_FLAGS))/share"

.PHONY: docs bench-push deps deps-build apt build install uninstall test demo demo-fanout fuzz tsan bench bench-update harness bench-fanout bench-capture bench-receiver bench-quality clean

## deps-build: the Debian packages a build needs; deps: those and everything the tests and
## benchmarks run (nothing to do when all are present)
deps-build:
	@$(MAKE) --no-print-directory apt PACKAGES="$(APT_BUILD)"

deps:
	@$(MAKE) --no-print-directory apt PACKAGES="$(APT_BUILD) $(APT_RUNTIME)"
	@python3 -c "import aiortc" 2>/dev/null || { echo "installing aiortc (PyPI)"; python3 -m pip install --quiet aiortc; }
	@python3 -c "import numpy" 2>/dev/null || { echo "installing numpy (PyPI)"; python3 -m pip install --quiet numpy; }

apt:
	@missing=""; for p in $(PACKAGES); do \
		dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
		echo "installing:$$missing"; \
		$(SUDO) apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	fi

## build: the tools (share and the programs it runs), release (CONFIGURATION=debug: what the tests built)
TOOLS := share share-send share-recv share-relay
CONFIGURATION ?= release
build: deps-build
	for p in $(TOOLS); do swift build -c $(CONFIGURATION) --product $$p $(SWIFT_FLAGS) || exit 1; done

## install: the tools, their man pages, bash, zsh and fish completions and a systemd user unit
## for share recv, into $(DESTDIR)$(PREFIX); uninstall removes them
PREFIX ?= /usr/local
BINDIR = $(PREFIX)/bin
MANDIR = $(PREFIX)/share/man/man1
COMPLETIONS = $(DESTDIR)$(PREFIX)/share/bash-completion/completions/share \
	$(DESTDIR)$(PREFIX)/share/zsh/site-functions/_share $(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d/share.fish
# In $XDG_DATA_DIRS (or, for PREFIX=~/.local, $XDG_DATA_HOME): systemd --user looks there.
UNIT = $(DESTDIR)$(PREFIX)/share/systemd/user/share-recv.service
# The licence goes with the binaries (GPL-3.0-or-later: see LICENSE and the README).
DOCDIR = $(DESTDIR)$(PREFIX)/share/doc/share
SUBCOMMANDS := send recv keygen ctl scene relay
install: build
	swift package plugin generate-manual --multi-page --configuration $(CONFIGURATION) $(SWIFT_FLAGS) >/dev/null
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(MANDIR) $(dir $(COMPLETIONS)) $(dir $(UNIT)) $(DOCDIR)
	install -m 644 LICENSE $(DOCDIR)/LICENSE
	bin="$$(swift build -c $(CONFIGURATION) --show-bin-path $(SWIFT_FLAGS))"; \
		for p in $(TOOLS); do install -m 755 "$$bin/$$p" $(DESTDIR)$(BINDIR)/$$p || exit 1; done
	@# share's pages: share(1), and share-send(1) for `share send` and so on.
	pages=.build/plugins/GenerateManual/outputs/share; install -m 644 $$pages/share.1 $(DESTDIR)$(MANDIR)/share.1 && \
		for c in $(SUBCOMMANDS); do install -m 644 $$pages/share.$$c.1 $(DESTDIR)$(MANDIR)/share-$$c.1 || exit 1; done
	set -e; for shell in bash zsh fish; do \
		case $$shell in bash) f=$(word 1,$(COMPLETIONS));; zsh) f=$(word 2,$(COMPLETIONS));; fish) f=$(word 3,$(COMPLETIONS));; esac; \
		$(DESTDIR)$(BINDIR)/share --generate-completion-script $$shell > $$f; chmod 644 $$f; done
	sed 's|@BINDIR@|$(BINDIR)|g' examples/systemd/share-recv.service > $(UNIT) && chmod 644 $(UNIT)

uninstall:
	rm -f $(foreach p,$(TOOLS),$(DESTDIR)$(BINDIR)/$(p)) $(DESTDIR)$(MANDIR)/share.1 \
		$(foreach c,$(SUBCOMMANDS),$(DESTDIR)$(MANDIR)/share-$(c).1) $(COMPLETIONS) $(UNIT) $(DOCDIR)/LICENSE
	-rmdir $(DOCDIR) 2>/dev/null

## test: the import graph of docs/architecture.md and the sizes of files and functions, the docs' links and that every option
## of the built tools is in docs/usage.md, `make install` and `uninstall` into a temporary root (man pages, completions,
## the systemd unit), then every test, including the ones that start Xvfb, PulseAudio, ffmpeg and GStreamer;
## in CI (CI set) also every fuzz target for CI_FUZZ_SECONDS, so new code is fuzzed on every change,
## and `make docs`, so the documentation cannot rot
CI_FUZZ_SECONDS ?= 20
test: deps
	python3 Tests/Docs/imports.py
	python3 Tests/Docs/sizes.py
	swift build $(SWIFT_FLAGS)
	python3 Tests/Docs/links.py "$$(swift build --show-bin-path $(SWIFT_FLAGS))/share"
	python3 Tests/Docs/install.py debug
	swift build --build-tests $(SWIFT_FLAGS)
	@# The whole output streams and goes to .build/test.log; on a failure what
	@# failed is repeated at the end, where a log's tail shows it.
	set -o pipefail; swift test --skip-build $(SWIFT_FLAGS) $(TEST_FILTER) 2>&1 | tee .build/test.log || { \
		echo "== what failed (the whole output is in .build/test.log) =="; \
		grep -E -A2 "recorded an issue|: error:|✘ Test .* failed" .build/test.log | grep -v -e "^--$$" | head -80; exit 1; }
	@if [ -n "$$CI" ]; then $(MAKE) --no-print-directory fuzz FUZZ_SECONDS=$(CI_FUZZ_SECONDS) && $(MAKE) --no-print-directory docs; fi

## docs: DocC for the embeddable sender and receiver (ShareSender, ShareReceiver) into $(DOCS_DIR),
## warnings as errors, and a check that every public symbol an embedder can reach is documented
docs: deps
	swift package --allow-writing-to-directory $(DOCS_DIR) generate-documentation --target ShareSender \
		--target ShareReceiver --output-path $(DOCS_DIR) --disable-indexing --warnings-as-errors $(SWIFT_FLAGS)
	swift package dump-symbol-graph --minimum-access-level public $(SWIFT_FLAGS) >/dev/null
	python3 Tests/Docs/coverage.py "$$(swift build --show-bin-path $(SWIFT_FLAGS))/../symbolgraph"

## demo: the main job on an embedded default (virtual X display, loopback peer)
demo: deps
	for p in share share-send share-recv; do swift build -c release --product $$p $(SWIFT_FLAGS) || exit 1; done
	examples/demo.sh

## demo-fanout: one encode, many viewers: Janus, `share send --janus` and a headless
## browser on the viewer page (examples/fanout/), with a screenshot in out/
demo-fanout: deps
	for p in share share-send share-recv; do swift build -c release --product $$p $(SWIFT_FLAGS) || exit 1; done
	examples/fanout/demo.sh

## tsan: the sender and receiver library tests (capture, encode, network, audio and decode threads,
## lifecycle from event handlers) under ThreadSanitizer in a separate build; any report fails the run
TSAN_FILTER ?= SenderTests|EmbeddingTests
tsan: deps
	swift build --build-tests --sanitize=thread --scratch-path .build/tsan $(SWIFT_FLAGS)
	TSAN_OPTIONS="halt_on_error=1 exitcode=66 $(TSAN_EXTRA)" \
		swift test --skip-build --sanitize=thread --scratch-path .build/tsan --filter '$(TSAN_FILTER)' $(SWIFT_FLAGS)

## fuzz: each libFuzzer target for FUZZ_SECONDS; a crash is saved under Tests/Fuzz/Crashes
fuzz: deps
	swift build -c release --sanitize fuzzer -Xswiftc -DFUZZING --product share-fuzz --scratch-path .build/fuzz
	@# One target per core at a time (each fuzzer is one thread); any crash fails the run.
	@fuzz_one() { t=$$1; work=.build/fuzz-corpus/$$t; mkdir -p $$work Tests/Fuzz/Crashes/$$t; \
		cp -n Tests/Fuzz/Corpus/$$t/* $$work/ 2>/dev/null || true; \
		echo "fuzzing $$t for $(FUZZ_SECONDS)s"; \
		SWIFT_BACKTRACE=enable=no SHARE_FUZZ_TARGET=$$t .build/fuzz/release/share-fuzz \
			-max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 \
			-artifact_prefix=Tests/Fuzz/Crashes/$$t/ $$work 2>.build/fuzz-$$t.log \
			|| { echo "crash in $$t: see .build/fuzz-$$t.log and Tests/Fuzz/Crashes/$$t/"; return 1; }; \
		echo "$$t: $$(grep -E "^stat::number_of_executed_units" .build/fuzz-$$t.log)"; }; \
	export -f fuzz_one; printf '%s\n' $(FUZZ_TARGETS) | xargs -P "$$(nproc)" -I{} bash -c 'fuzz_one {}'

## bench-fanout: Janus's CPU and memory forwarding one `share send --janus` stream to 0, 10, 50 and
## 100 WebRTC viewers (aiortc from PyPI), a headless browser's time to its first picture, the
## sender's cost feeding 1, 4 and 16 Janus servers; then the capacity plan for 10,000 viewers
bench-fanout: deps
	for p in share share-send; do swift build -c release --product $$p $(SWIFT_FLAGS) || exit 1; done
	python3 Benchmarks/fanout.py $(FANOUT_ARGS)
	python3 Benchmarks/capacity.py

## bench-capture: what capturing costs the sender: a 4K screen (in bands, encoded at 1080p) beside
## 1080p, a still screen, and the pointer moving over it (only its bands grabbed, and grabbed whole);
## then how soon the pointer's first move after a rest leaves the sender (Benchmarks/pointer.py)
bench-capture: deps
	for p in share share-send share-recv; do swift build -c release --product $$p $(SWIFT_FLAGS) || exit 1; done
	python3 Benchmarks/capture.py $(CAPTURE_ARGS)
	python3 Benchmarks/pointer.py

## bench-quality: picture quality beside cost (PSNR, SSIM, text SSIM, bits sent, CPU per frame) of
## share, ffmpeg and GStreamer on four scenes at the default bitrate and a third of it
## (Benchmarks/quality.py; QUALITY_ARGS="--scenes text --senders share" for part of it)
bench-quality: deps
	for p in share share-send share-recv; do swift build -c release --product $$p $(SWIFT_FLAGS) || exit 1; done
	python3 Benchmarks/quality.py $(QUALITY_ARGS)

## bench-receiver: what `share recv` adds to the latency (last packet to display, with the pointer
## drawn in and sent apart) and its CPU while the pointer moves; RECEIVER_ARGS="--bin DIR --bin OLD"
## puts builds side by side (Benchmarks/receiver.py)
bench-receiver: deps
	for p in share share-send share-recv; do swift build -c release --product $$p $(SWIFT_FLAGS) || exit 1; done
	python3 Benchmarks/receiver.py $(RECEIVER_ARGS)

## bench: the package-benchmark suites in Benchmarks/ (per stage at 720p and 1080p, the wire path,
## the handshake), gated on what does not depend on the machine: allocations, against the p90s
## committed in Benchmarks/Thresholds/ (exit 2 on a regression). Wall times are reported by
## `cd Benchmarks && swift package benchmark`, never gated (another machine of this kind is slower).
## After an intended change: make bench-update.
bench: deps
	swift build $(SWIFT_FLAGS)
	cd Benchmarks && $(BENCH_ENV) swift package benchmark thresholds check --path "$$PWD/Thresholds" --no-progress \
		--skip-target EmbeddingBenchmarks

## bench-push: a host's thread pushing 1080p BGRA at 120 Hz into a running 30 fps sender: the wall
## time of each push (p99 under 1 ms is the promise), and what became of the pushes. Only wall time
## means anything here, so nothing is gated (make bench skips it).
bench-push: deps
	cd Benchmarks && swift package benchmark --target EmbeddingBenchmarks --no-progress

## bench-update: new thresholds, keeping only the machine-independent metrics
bench-update: deps
	swift build $(SWIFT_FLAGS)
	cd Benchmarks && $(BENCH_ENV) swift package --allow-writing-to-package-directory benchmark thresholds update --no-progress \
		--skip-target EmbeddingBenchmarks
	python3 -c 'import glob, json; [(lambda kept, p: open(p, "w").write(json.dumps(kept, indent=2, sort_keys=True) + "\n"))({k: v for k, v in json.load(open(p)).items() if k not in ("wallClock", "throughput", "cpuTotal")}, p) for p in glob.glob("Benchmarks/Thresholds/*.json")]'

## harness: share, ffmpeg and GStreamer side by side (glass-to-glass latency, CPU, memory);
## HARNESS_ARGS="--quick" for a short version (under two minutes). Writes Benchmarks/results/.
harness: deps
	for p in share share-send share-recv; do swift build -c release --product $$p $(SWIFT_FLAGS) || exit 1; done
	python3 Benchmarks/harness.py $(HARNESS_ARGS)

clean:
	rm -rf .build Benchmarks/.build
