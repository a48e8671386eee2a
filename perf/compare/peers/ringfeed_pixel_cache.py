"""ringfeed's pixel cache: the issue's third ringfeed row, once it exists."""
NAME = "ringfeed (pixel cache)"
PACKAGES = []
DIFFERS = ""
PIXELS = ""
SKIP = "ringfeed has no pixel cache yet (cache_dir caches network bytes, not decoded pixels)"
