// placeholder: implemented by the session building layout
