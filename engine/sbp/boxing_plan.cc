// placeholder: implemented by the session building boxing_plan
