#!/usr/bin/env node
// `npx auwgent ...`: the Auwgent compiler (check, generate, fmt, lsp, test) for projects that
// install the TypeScript runtime with npm. It runs, in this order, the first that exists:
//   1. the executable named by AUWGENT_BINARY;
//   2. the standalone executable of the platform package auwgent-<platform>-<arch>, an
//      optional dependency that npm installs only on its own platform;
//   3. an `auwgent` command on PATH (the Python package: pip install auwgent), said on stderr.
// With none of them it says so and exits with 127. Arguments, standard streams and the exit
// code (or the signal) pass through unchanged.
import { spawn } from "node:child_process"
import { accessSync, constants, realpathSync } from "node:fs"
import { createRequire } from "node:module"
import path from "node:path"
import { fileURLToPath } from "node:url"

const NOT_FOUND = 127
// Set for an `auwgent` found on PATH: if that is another copy of this script, it must not
// look on PATH again (it would start itself forever).
const FROM_PATH = "AUWGENT_NPM_FROM_PATH"
const platformPackage = `auwgent-${process.platform}-${process.arch}`
const exeName = process.platform === "win32" ? "auwgent.exe" : "auwgent"

function isExecutable(file) {
  try {
    accessSync(file, constants.X_OK)
    return true
  } catch {
    return false
  }
}

function fromPlatformPackage() {
  const require = createRequire(import.meta.url)
  try {
    const manifest = require.resolve(`${platformPackage}/package.json`)
    const exe = path.join(path.dirname(manifest), "bin", exeName)
    return isExecutable(exe) ? exe : undefined
  } catch {
    return undefined
  }
}

function fromPath() {
  if (process.env[FROM_PATH]) return undefined
  const self = realpathSync(fileURLToPath(import.meta.url))
  const names = process.platform === "win32" ? ["auwgent.exe", "auwgent.cmd"] : ["auwgent"]
  for (const folder of (process.env.PATH ?? "").split(path.delimiter)) {
    for (const name of names) {
      const candidate = path.join(folder || ".", name)
      if (!isExecutable(candidate)) continue
      let real
      try {
        real = realpathSync(candidate)
      } catch {
        continue
      }
      if (real !== self) return candidate
    }
  }
  return undefined
}

function find() {
  const given = process.env.AUWGENT_BINARY
  if (given) {
    if (isExecutable(given)) return given
    process.stderr.write(`auwgent: AUWGENT_BINARY is ${given}, which is not an executable file\n`)
    process.exit(NOT_FOUND)
  }
  const packaged = fromPlatformPackage()
  if (packaged) return packaged
  const onPath = fromPath()
  if (onPath) {
    process.stderr.write(
      `auwgent: ${platformPackage} is not installed; using ${onPath} from PATH\n`,
    )
    return onPath
  }
  process.stderr.write(
    `auwgent: no Auwgent compiler for ${process.platform}-${process.arch}: the optional ` +
      `package ${platformPackage} is not installed (it is built for linux-x64, linux-arm64, ` +
      "darwin-x64, darwin-arm64 and win32-x64; npm skips it with --omit=optional) and no " +
      "`auwgent` command is on PATH. Install the Python package instead " +
      "(pip install auwgent), or set AUWGENT_BINARY to the compiler's path.\n",
  )
  process.exit(NOT_FOUND)
}

const child = spawn(find(), process.argv.slice(2), {
  stdio: "inherit",
  env: { ...process.env, [FROM_PATH]: "1" },
})
// The terminal sends Ctrl-C to the whole process group: the compiler handles it, this waits
// for it. A termination sent to this process alone is passed on.
process.on("SIGINT", () => {})
for (const signal of ["SIGTERM", "SIGHUP"]) process.on(signal, () => child.kill(signal))
child.on("error", (error) => {
  process.stderr.write(`auwgent: could not start the compiler: ${error.message}\n`)
  process.exit(NOT_FOUND)
})
child.on("exit", (code, signal) => {
  if (signal) {
    process.removeAllListeners(signal)
    process.kill(process.pid, signal)
  } else {
    process.exit(code ?? 1)
  }
})
