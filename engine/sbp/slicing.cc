// placeholder: implemented by the session building slicing
