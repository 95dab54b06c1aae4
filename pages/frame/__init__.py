"""The app's frame around every page: the sidebar that makes the view the pages read."""
