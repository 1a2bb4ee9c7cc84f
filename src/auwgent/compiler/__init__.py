"""The compiler: .agent sources to diagnostics and IR. Imports the standard library only."""
