"""The chaos timeline of a drill: which experiment runs when (`timeline`), each `chaos run` as a
child process (`process`, entered through `main`), and the drill's one seam to all of it (`bridge`)."""
