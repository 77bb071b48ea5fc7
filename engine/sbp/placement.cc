// placeholder: implemented by the session building placement
