import Foundation
import PackagePlugin

/// Writes `shareVersion`, what `git describe` says of the checkout, into a
/// source file of the target before each build, so `share --version` names
/// the commit it was built from. The file is rewritten only when the text
/// changes (no rebuild otherwise); outside a git checkout it says "unknown".
@main
struct VersionStamp: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: Target) throws -> [Command] {
        let output = context.pluginWorkDirectoryURL.appending(path: "stamp")
        let script = """
            mkdir -p "$2"
            version=$(git -C "$1" describe --tags --always --dirty 2>/dev/null || echo unknown)
            printf '/// What `git describe` said of the checkout at build time.\\npublic let shareVersion = "%s"\\n' "$version" >"$2/Version.swift.new"
            if cmp -s "$2/Version.swift.new" "$2/Version.swift"; then rm "$2/Version.swift.new"; else mv "$2/Version.swift.new" "$2/Version.swift"; fi
            """
        return [.prebuildCommand(displayName: "Stamp the version from git describe", executable: URL(fileURLWithPath: "/bin/sh"),
                                 arguments: ["-c", script, "sh", context.package.directoryURL.path, output.path],
                                 outputFilesDirectory: output)]
    }
}
